import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Option, Schema, TestClock } from "effect"
import { maxRetryAfter, retryAfterDelay } from "../src/Webhooks/RetrySchedule.js"
import { SurveyId } from "../src/Domain/Ids.js"
import { clientFor, outcomeOf } from "./support/ApiClient.js"
import { TOKENS } from "./support/Fixtures.js"
import { decodeAs } from "./support/TestServer.js"
import { eventually, receiver } from "./support/WebhookReceiver.js"
import { complete, deliveries, loggedAttempts, register, WebhookWorld } from "./support/WebhookWorld.js"
import { advance } from "./support/Advance.js"

/** The outbox is polled hourly here, so that the clock moves only when the test moves it. */
const world = WebhookWorld({ pollInterval: Duration.hours(1) })

const fannedOutTo = (seq: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* eventually(
      sql`SELECT last_seq FROM outbox_cursors WHERE name = 'webhooks'`.pipe(
        Effect.orDie,
        Effect.map((rows) => decodeAs(Schema.Array(Schema.Struct({ lastSeq: Schema.Number })), rows))
      ),
      (rows) => (rows[0]?.lastSeq ?? 0) >= seq
    )
  })

const eventSeq = (eventId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = decodeAs(
      Schema.Array(Schema.Struct({ seq: Schema.Number })),
      yield* sql`SELECT seq FROM events WHERE id = ${eventId}`.pipe(Effect.orDie)
    )
    return rows[0]?.seq ?? 0
  })

const srvMain = { path: { id: SurveyId.make("srv_main") } }

/** Moves the clock to each pending delivery's due time until none is pending; bounded. */
const runOutRetries = Effect.gen(function*() {
  for (let round = 0; round < 20; round++) {
    const pending = (yield* deliveries).filter((d) => d.state === "pending" && d.leaseUntil === 0)
    const first = pending.sort((a, b) => a.nextAttemptAt - b.nextAttemptAt)[0]
    if (first === undefined) return
    const before = (yield* loggedAttempts).length
    const now = yield* TestClock.currentTimeMillis
    yield* advance(Duration.millis(Math.max(0, first.nextAttemptAt - now)))
    yield* eventually(loggedAttempts, (all) => all.length > before)
    yield* eventually(deliveries, (all) => all.every((d) => d.leaseUntil === 0))
  }
  return yield* Effect.dieMessage("retries did not run out")
})

describe("automatic disable", () => {
  it.effect("a 410 disables the webhook at once; its pending deliveries end unattempted; PUT enables it again", () =>
    Effect.gen(function*() {
      // The first answer asks for a retry in 10 hours, so that the first event waits while the second is sent.
      let status = 429
      const target = yield* receiver(() => new Response("", { status, headers: { "retry-after": "36000" } }))
      const secret = yield* register(target.url, "srv_main")
      const first = yield* complete("srv_main")
      yield* advance("1 hour")
      yield* eventually(deliveries, (all) => all[0]?.attempts === 1 && all[0].leaseUntil === 0)
      // The first event waits for its retry; the second meets a receiver that is gone.
      status = 410
      yield* complete("srv_main", "ws_a", "rsp_2")
      yield* advance("1 hour")
      yield* eventually(loggedAttempts, (all) => all.length === 2)
      yield* eventually(deliveries, (all) => all.every((d) => d.leaseUntil === 0))
      const api = yield* clientFor(TOKENS.editor)
      const settings = yield* api.surveyWebhook.get(srvMain)
      expect(settings).toEqual({
        enabled: false,
        targetUrl: target.url,
        events: ["response.completed", "survey.published", "survey.closed"],
        disabledReason: "gone",
        previousSecretExpiresAt: null,
        maxAttemptsPerSecond: null
      })
      const states = yield* deliveries
      expect(states.map((d) => [d.state, d.attempts])).toEqual([["given_up", 1], ["given_up", 1]])
      expect((yield* loggedAttempts).map((a) => a.eventId)).toContain(first.id)

      // New events are not queued for it.
      const third = yield* complete("srv_main", "ws_a", "rsp_3")
      yield* advance("1 hour")
      yield* fannedOutTo(yield* eventSeq(third.id))
      expect(yield* deliveries).toHaveLength(2)
      expect(yield* target.received).toHaveLength(2)

      // Operations that need an enabled webhook say so.
      expect(yield* outcomeOf(api.surveyWebhook.test(srvMain))).toBe("InvalidRequest")

      // PUT enables it again with a new secret.
      status = 200
      const registered = yield* api.surveyWebhook.put({ ...srvMain, payload: { targetUrl: target.url } })
      expect(registered).toMatchObject({ enabled: true, disabledReason: null })
      expect(registered.signingSecret).not.toBe(secret)
      expect((yield* api.surveyWebhook.get(srvMain)).disabledReason).toBeNull()
      const fourth = yield* complete("srv_main", "ws_a", "rsp_4")
      yield* advance("1 hour")
      const log = yield* eventually(loggedAttempts, (all) => all.length === 3)
      expect(log[2]).toMatchObject({ eventId: fourth.id, ok: 1 })
    }).pipe(Effect.provide(world), Effect.scoped))

  it.effect("five days of nothing but failures disable it at the next failed attempt; a success starts over", () =>
    Effect.gen(function*() {
      let status = 500
      const target = yield* receiver(() => new Response("", { status }))
      yield* register(target.url)
      const api = yield* clientFor(TOKENS.editor)
      const start = yield* TestClock.currentTimeMillis

      // A success at day 2 clears the record of the failures before it.
      yield* complete("srv_main")
      yield* advance("1 hour")
      yield* runOutRetries
      yield* advance(Duration.millis(start + Duration.toMillis(Duration.days(2)) - (yield* TestClock.currentTimeMillis)))
      status = 200
      expect(yield* api.workspaceWebhooks.test({})).toEqual({ delivered: true })
      status = 500

      // Failing from day 3: all eight attempts of an event (27.6 hours) fail, still enabled.
      yield* advance("1 day")
      const succeeded = (yield* loggedAttempts).length
      yield* complete("srv_main", "ws_a", "rsp_2")
      yield* advance("1 hour")
      yield* runOutRetries
      expect((yield* deliveries).map((d) => d.state)).toEqual(["given_up", "given_up"])
      expect(yield* api.workspaceWebhooks.get({})).toMatchObject({ enabled: true, disabledReason: null })
      const failingSince = (yield* loggedAttempts)[succeeded]?.attemptedAt ?? 0

      // Just within five days of the first failure since the success: a failure keeps it enabled.
      const fiveDays = Duration.toMillis(Duration.days(5))
      yield* advance(Duration.millis(failingSince + fiveDays - (yield* TestClock.currentTimeMillis)))
      expect(yield* api.workspaceWebhooks.test({})).toEqual({ delivered: false })
      expect(yield* api.workspaceWebhooks.get({})).toMatchObject({ enabled: true, disabledReason: null })

      // Past five days: the next failed attempt disables it.
      yield* advance("1 millis")
      yield* complete("srv_main", "ws_a", "rsp_3")
      yield* advance("1 hour")
      yield* eventually(deliveries, (all) => all.length === 3 && all[2]?.state === "given_up")
      expect(yield* api.workspaceWebhooks.get({})).toEqual({
        enabled: false,
        targetUrl: target.url,
        events: ["response.completed", "survey.published", "survey.closed"],
        disabledReason: "failing",
        previousSecretExpiresAt: null,
        maxAttemptsPerSecond: null
      })
      expect((yield* deliveries)[2]?.attempts).toBe(1)
      const log = yield* loggedAttempts
      expect(log.filter((a) => a.ok === 1)).toHaveLength(1)
      expect(log.every((a) => a.attemptedAt >= start)).toBe(true)
    }).pipe(Effect.provide(world), Effect.scoped))
})

describe("Retry-After", () => {
  it("reads delay-seconds and HTTP dates, caps them at 10 hours and ignores anything else", () => {
    const now = Date.UTC(2026, 10, 23, 12, 0, 0)
    const ms = (header: string | null) => Option.map(retryAfterDelay(header, now), Duration.toMillis)
    expect(ms("120")).toEqual(Option.some(120_000))
    expect(ms(" 0 ")).toEqual(Option.some(0))
    expect(ms("Mon, 23 Nov 2026 14:00:00 GMT")).toEqual(Option.some(7_200_000))
    expect(ms("Mon, 23 Nov 2026 11:00:00 GMT")).toEqual(Option.some(0))
    expect(ms("86400")).toEqual(Option.some(Duration.toMillis(maxRetryAfter)))
    expect(ms("Tue, 24 Nov 2026 14:00:00 GMT")).toEqual(Option.some(Duration.toMillis(maxRetryAfter)))
    for (const bad of [null, "", "-5", "1.5", "soon", "2026-11-23T14:00:00Z", "99999999999999999999"]) {
      expect(ms(bad), String(bad)).toEqual(Option.none())
    }
  })

  it.effect("429 and 503 answers hold the next attempt back until Retry-After has passed, capped at 10 hours", () =>
    Effect.gen(function*() {
      const answers: Array<Response> = []
      const target = yield* receiver(() => answers.shift() ?? new Response("ok"))
      yield* register(target.url)
      const nextWait = Effect.gen(function*() {
        const [delivery] = yield* deliveries
        const log = yield* loggedAttempts
        const last = log[log.length - 1]
        if (delivery === undefined || last === undefined) return yield* Effect.dieMessage("no delivery")
        return { wait: delivery.nextAttemptAt - last.attemptedAt, due: delivery.nextAttemptAt, attempts: delivery.attempts }
      })
      const attemptAt = (due: number, count: number) =>
        Effect.gen(function*() {
          yield* advance(Duration.millis(due - (yield* TestClock.currentTimeMillis)))
          const log = yield* eventually(loggedAttempts, (all) => all.length === count)
          yield* eventually(deliveries, (all) => all[0]?.leaseUntil === 0)
          // Never before the due time.
          expect(log[count - 1]?.attemptedAt).toBe(due)
        })

      answers.push(new Response("", { status: 429, headers: { "retry-after": "3600" } }))
      yield* complete("srv_main")
      yield* advance("1 hour")
      yield* eventually(deliveries, (all) => all[0]?.attempts === 1 && all[0].leaseUntil === 0)
      // The schedule says 5 s; the receiver asked for an hour.
      const first = yield* nextWait
      expect(first.wait).toBe(3_600_000)

      const now = yield* TestClock.currentTimeMillis
      answers.push(
        new Response("", { status: 503, headers: { "retry-after": new Date(first.due + 7_200_000).toUTCString() } })
      )
      expect(now).toBeLessThan(first.due)
      yield* attemptAt(first.due, 2)
      expect((yield* nextWait).wait).toBe(7_200_000)

      answers.push(new Response("", { status: 429, headers: { "retry-after": "86400" } }))
      yield* attemptAt((yield* nextWait).due, 3)
      expect((yield* nextWait).wait).toBe(Duration.toMillis(maxRetryAfter))

      // A shorter Retry-After does not bring the schedule's next step (2 h) forward.
      answers.push(new Response("", { status: 503, headers: { "retry-after": "1" } }))
      yield* attemptAt((yield* nextWait).due, 4)
      const fourth = yield* nextWait
      expect(fourth.wait).toBeGreaterThanOrEqual(7_200_000)
      expect(fourth.wait).toBeLessThanOrEqual(7_920_000)

      // Other statuses' Retry-After is not read: the schedule's 5 h step.
      answers.push(new Response("", { status: 500, headers: { "retry-after": "36000" } }))
      yield* attemptAt(fourth.due, 5)
      const fifth = yield* nextWait
      expect(fifth.wait).toBeGreaterThanOrEqual(18_000_000)
      expect(fifth.wait).toBeLessThanOrEqual(19_800_000)

      yield* attemptAt(fifth.due, 6)
      expect((yield* deliveries)[0]).toMatchObject({ state: "delivered", attempts: 6 })
    }).pipe(Effect.provide(world), Effect.scoped))
})
