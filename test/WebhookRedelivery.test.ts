import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Schema, TestClock } from "effect"
import { Webhook } from "standardwebhooks"
import { toIso } from "../src/Domain/Time.js"
import { EventEnvelope, type EventType } from "../src/Domain/Event.js"
import { OutboxRepo } from "../src/Events/OutboxRepo.js"
import { InvalidRequest } from "../src/Domain/Errors.js"
import type { RecoveryWindow } from "../src/Webhooks/Api.js"
import { purgeOnce } from "../src/Webhooks/Purge.js"
import { Redelivery as RedeliveryService } from "../src/Webhooks/Redelivery.js"
import { WebhookRepo } from "../src/Webhooks/WebhookRepo.js"
import { clientFor, outcomeOf } from "./support/ApiClient.js"
import { TOKENS } from "./support/Fixtures.js"
import { bodyOf, call, decodeAs } from "./support/TestServer.js"
import { eventually, receiver } from "./support/WebhookReceiver.js"
import { deliveries, loggedAttempts, register, WebhookWorld } from "./support/WebhookWorld.js"
import { advance } from "./support/Advance.js"
import { SurveyId, WorkspaceId } from "../src/Domain/Ids.js"

/** The outbox is polled hourly here, so that the clock moves only when the test moves it. */
const world = WebhookWorld({ pollInterval: Duration.hours(1) })

const emit = (type: EventType, surveyId: string, workspaceId = "ws_a") =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const outbox = yield* OutboxRepo
    return yield* sql.withTransaction(outbox.append({ type, workspaceId, surveyId, data: { n: Math.random() } }))
      .pipe(Effect.orDie)
  })

const survey = (id: string) => ({ path: { id: SurveyId.make(id) } })

/** Redelivers an event to the workspace webhook, or to the webhook of `surveyId`, through the typed client. */
const redeliver = (eventId: string, surveyId?: string, token: string = TOKENS.editor) =>
  Effect.flatMap(clientFor(token), (api) =>
    surveyId === undefined
      ? api.workspaceWebhooks.redeliver({ path: { eventId } })
      : api.surveyWebhook.redeliver({ path: { id: SurveyId.make(surveyId), eventId } }))

/** Recovers a window for the workspace webhook, or for the webhook of `surveyId`, through the typed client. */
const recover = (payload: typeof RecoveryWindow.Type, surveyId?: string, token: string = TOKENS.editor) =>
  Effect.flatMap(clientFor(token), (api) =>
    surveyId === undefined
      ? api.workspaceWebhooks.recover({ payload })
      : api.surveyWebhook.recover({ ...survey(surveyId), payload }))

/** The paths of the issues a typed call was refused with; fails the test unless it was refused as invalid. */
const refusedIssues = <A, E extends { readonly _tag: string }, R>(call: Effect.Effect<A, E, R>) =>
  Effect.flatMap(
    Effect.flip(call),
    (error) =>
      error instanceof InvalidRequest
        ? Effect.succeed((error.issues ?? []).map((issue) => issue.path))
        : Effect.dieMessage(`refused as ${error._tag}, not as invalid`)
  )

const settled = eventually(deliveries, (all) => all.every((d) => d.leaseUntil === 0))

const IssueBody = Schema.Struct({
  code: Schema.String,
  issues: Schema.Array(Schema.Struct({ path: Schema.String, message: Schema.String }))
})

describe("redeliver one event", () => {
  it.effect("sends the same bytes and event id again, signed with the current secret at a fresh time", () =>
    Effect.gen(function*() {
      let status = 200
      const target = yield* receiver(() => new Response("", { status }))
      yield* register(target.url, "srv_main")
      const event = yield* emit("response.completed", "srv_main")
      yield* advance("1 hour")
      yield* eventually(target.received, (all) => all.length === 1)
      yield* settled

      // A new secret and a filter that no longer names the event's type: redelivery still sends it.
      const api = yield* clientFor(TOKENS.editor)
      const { signingSecret: secret } = yield* api.surveyWebhook.put({
        ...survey("srv_main"),
        payload: { targetUrl: target.url, events: ["survey.closed"] }
      })
      yield* advance("1 hour")
      status = 500
      // The typed call succeeds only on the declared 202.
      expect(yield* redeliver(event.id, "srv_main")).toEqual({ eventId: event.id, queued: true })
      yield* advance("1 hour")
      const [first, again] = yield* eventually(target.received, (all) => all.length === 2)
      if (first === undefined || again === undefined) return yield* Effect.dieMessage("the receiver holds fewer than two requests")
      expect(again.body).toBe(first.body)
      expect(again.headers["webhook-id"]).toBe(event.id)
      expect(again.headers["x-service-event-id"]).toBe(event.id)
      expect(Number(again.headers["webhook-timestamp"])).toBeGreaterThan(Number(first.headers["webhook-timestamp"]))
      expect(again.headers["webhook-signature"]).toBe(
        new Webhook(secret).sign(event.id, new Date(Number(again.headers["webhook-timestamp"]) * 1000), again.body)
      )
      expect(decodeAs(EventEnvelope, JSON.parse(again.body)).id).toBe(event.id)

      // It failed and waits for its retry: asking again adds nothing.
      yield* settled
      expect(yield* redeliver(event.id, "srv_main")).toEqual({ eventId: event.id, queued: false })
      expect((yield* deliveries).filter((d) => d.state === "pending")).toHaveLength(1)
      // The workspace path answers for the workspace webhook, which there is none of.
      expect(yield* outcomeOf(redeliver(event.id))).toBe("InvalidRequest")
    }).pipe(Effect.provide(world), Effect.scoped))

  it.effect("restarts the retry schedule from its first step once the delivery was given up", () =>
    Effect.gen(function*() {
      const target = yield* receiver(() => new Response("", { status: 500 }))
      yield* register(target.url)
      const event = yield* emit("survey.published", "srv_draft")
      yield* advance("1 hour")
      for (let attempt = 1; attempt <= 8; attempt++) {
        const [delivery] = yield* eventually(deliveries, (all) => all[0]?.attempts === attempt && all[0].leaseUntil === 0)
        if (delivery === undefined) return yield* Effect.dieMessage(`no delivery after attempt ${attempt}`)
        if (delivery.state === "pending") {
          yield* advance(Duration.millis(delivery.nextAttemptAt - (yield* TestClock.currentTimeMillis)))
        }
      }
      expect((yield* deliveries)[0]?.state).toBe("given_up")
      expect(yield* redeliver(event.id)).toEqual({ eventId: event.id, queued: true })
      const queuedAt = yield* TestClock.currentTimeMillis
      yield* advance("1 hour")
      const [delivery] = yield* eventually(deliveries, (all) => all[0]?.attempts === 1 && all[0].leaseUntil === 0)
      const log = yield* loggedAttempts
      const last = log[log.length - 1]
      expect(log).toHaveLength(9)
      // At once (the first poll after queuing), then the schedule's first step: 5 s, up to 10% more.
      expect(last?.attemptedAt).toBeLessThanOrEqual(queuedAt + Duration.toMillis(Duration.hours(1)))
      const wait = (delivery?.nextAttemptAt ?? 0) - (last?.attemptedAt ?? 0)
      expect(wait).toBeGreaterThanOrEqual(5_000)
      expect(wait).toBeLessThanOrEqual(5_500)
      expect(delivery?.state).toBe("pending")
    }).pipe(Effect.provide(world), Effect.scoped))

  it.effect("404 for events of another scope, unknown or older than 30 days; 400 without an enabled webhook; 403", () =>
    Effect.gen(function*() {
      const target = yield* receiver(() => new Response("", { status: 410 }))
      const mine = yield* emit("survey.published", "srv_main")
      const otherSurvey = yield* emit("survey.published", "srv_draft")
      const otherWorkspace = yield* emit("survey.published", "srv_other", "ws_b")
      // No webhook: 400, once the event is found.
      expect(yield* outcomeOf(redeliver(mine.id))).toBe("InvalidRequest")
      expect(yield* outcomeOf(redeliver(mine.id, "srv_main"))).toBe("InvalidRequest")
      yield* register(target.url, "srv_main")
      yield* register(target.url)
      for (const id of [otherWorkspace.id, "evt_nope"]) {
        expect(yield* outcomeOf(redeliver(id)), id).toBe("NotFound")
      }
      // The client puts the id into the path as it is: "%20" reaches the service as an escaped space.
      for (const id of [otherSurvey.id, otherWorkspace.id, "evt_nope", "%20"]) {
        expect(yield* outcomeOf(redeliver(id, "srv_main")), id).toBe("NotFound")
      }
      expect(yield* outcomeOf(redeliver(otherWorkspace.id, "srv_other"))).toBe("NotFound")
      expect(yield* outcomeOf(redeliver(mine.id, "srv_nope"))).toBe("NotFound")
      // Roles and scope.
      expect(yield* outcomeOf(redeliver(mine.id, undefined, TOKENS.viewer))).toBe("Forbidden")
      expect(yield* outcomeOf(redeliver(mine.id, undefined, TOKENS.limited))).toBe("Forbidden")
      expect(yield* outcomeOf(redeliver(otherSurvey.id, "srv_draft", TOKENS.limited))).toBe("Forbidden")
      // The typed call succeeds only on the declared 202.
      expect(yield* outcomeOf(redeliver(mine.id, "srv_main", TOKENS.limited))).toBe("ok")
      // Disabled (the receiver is gone): 400 and nothing queued.
      yield* advance("1 day")
      yield* eventually(loggedAttempts, (all) => all.length >= 1)
      yield* settled
      const before = yield* deliveries
      expect(yield* outcomeOf(redeliver(mine.id, "srv_main"))).toBe("InvalidRequest")
      expect(yield* deliveries).toEqual(before)
      // The workspace webhook still works; past 30 days the event is gone.
      expect(yield* outcomeOf(redeliver(mine.id))).toBe("ok")
      yield* advance("30 days")
      expect(yield* outcomeOf(redeliver(mine.id))).toBe("NotFound")
    }).pipe(Effect.provide(WebhookWorld({ pollInterval: Duration.days(1), purgeInterval: Duration.days(1) })), Effect.scoped))
})

describe("redeliver during an attempt", () => {
  it.live("an attempt still in flight when its webhook was switched off is not doubled by a redelivery", () =>
    Effect.gen(function*() {
      const release = yield* Deferred.make<void>()
      const released = Effect.runPromise(Deferred.await(release))
      let requests = 0
      const target = yield* receiver(() => {
        requests++
        // The first event's attempt hangs until released; the second meets a receiver that is gone.
        return requests === 1 ? released.then(() => new Response("ok")) : new Response("", { status: requests === 2 ? 410 : 200 })
      })
      yield* register(target.url)
      const first = yield* emit("survey.published", "srv_main")
      yield* eventually(target.received, (all) => all.length === 1)
      yield* emit("survey.closed", "srv_main")
      const api = yield* clientFor(TOKENS.editor)
      yield* eventually(api.workspaceWebhooks.get({}).pipe(Effect.orDie), (settings) => settings.disabledReason === "gone")
      yield* register(target.url)
      // The first attempt is still in flight: nothing is added.
      expect(yield* redeliver(first.id)).toEqual({ eventId: first.id, queued: false })
      yield* Deferred.succeed(release, undefined)
      yield* eventually(deliveries, (all) => all[0]?.leaseUntil === 0 && all[0].state === "delivered")
      expect(yield* target.received).toHaveLength(2)
      expect(yield* redeliver(first.id)).toEqual({ eventId: first.id, queued: true })
      yield* eventually(target.received, (all) => all.length === 3)
    }).pipe(Effect.provide(WebhookWorld()), Effect.scoped))
})

describe("recover a window", () => {
  it.effect("queues the scope's events of the window that were not delivered, before the webhook and while disabled", () =>
    Effect.gen(function*() {
      let status = 200
      const target = yield* receiver(() => new Response("", { status }))
      yield* advance("1 day")
      const start = yield* TestClock.currentTimeMillis
      // Before the webhook existed: one event it receives, one it does not, one of another survey.
      const before = yield* emit("response.completed", "srv_main")
      yield* emit("response.created", "srv_main")
      yield* emit("response.completed", "srv_draft")
      yield* advance("1 minute")
      yield* register(target.url, "srv_main")
      const delivered = yield* emit("survey.closed", "srv_main")
      yield* advance("1 hour")
      yield* eventually(target.received, (all) => all.length === 1)
      yield* settled

      // Gone: disabled; the next event is not queued for it.
      status = 410
      const gone = yield* emit("survey.published", "srv_main")
      yield* advance("1 hour")
      yield* eventually(target.received, (all) => all.length === 2)
      yield* settled
      const missed = yield* emit("survey.closed", "srv_main")
      yield* advance("1 hour")

      expect(yield* outcomeOf(recover({ since: toIso(start) }, "srv_main"))).toBe("InvalidRequest")
      status = 200
      const api = yield* clientFor(TOKENS.editor)
      yield* api.surveyWebhook.put({ ...survey("srv_main"), payload: { targetUrl: target.url } })
      const until = toIso((yield* TestClock.currentTimeMillis) + 1)
      // The typed call succeeds only on the declared 202.
      expect(yield* recover({ since: toIso(start), until }, "srv_main")).toEqual({ queued: 3 })
      // Right after, they are pending (or delivered): nothing more.
      expect(yield* recover({ since: toIso(start) }, "srv_main")).toEqual({ queued: 0 })
      yield* advance("1 hour")
      const received = yield* eventually(target.received, (all) => all.length === 5)
      const ids = received.slice(2).map((r) => r.headers["webhook-id"]).sort()
      expect(ids).toEqual([before.id, gone.id, missed.id].sort())
      yield* settled
      expect(yield* recover({ since: toIso(start) }, "srv_main")).toEqual({ queued: 0 })
      expect(received.map((r) => r.headers["webhook-id"])).not.toContain(undefined)
      expect(received.filter((r) => r.headers["webhook-id"] === delivered.id)).toHaveLength(1)
    }).pipe(Effect.provide(world), Effect.scoped))

  it.effect("refuses windows older than 30 days, empty or reversed, and malformed instants; changes nothing", () =>
    Effect.gen(function*() {
      const target = yield* receiver()
      yield* emit("survey.published", "srv_main")
      yield* register(target.url)
      yield* advance("40 days")
      const now = yield* TestClock.currentTimeMillis
      const day = Duration.toMillis(Duration.days(1))
      const cases: ReadonlyArray<readonly [typeof RecoveryWindow.Type, string]> = [
        [{ since: toIso(now - 31 * day) }, "since"],
        [{ since: toIso(now - day), until: toIso(now - 2 * day) }, "since"],
        [{ since: toIso(now - day), until: toIso(now - day) }, "since"],
        [{ since: toIso(now + day) }, "since"],
        [{ since: "2026-02-30T00:00:00Z" }, "since"],
        [{ since: "yesterday" }, "since"],
        [{ since: "2026-01-01T00:00:00" }, "since"],
        [{ since: toIso(now - day), until: "tomorrow" }, "until"]
      ]
      for (const [payload, path] of cases) {
        for (const surveyId of [undefined, "srv_main"]) {
          expect(yield* refusedIssues(recover(payload, surveyId)), `${surveyId} ${JSON.stringify(payload)}`).toContain(path)
        }
      }
      // Raw: bodies the typed client cannot send (no since, a number for it, not JSON).
      const post = (path: string, body: string) => call("POST", `/api/v1${path}`, { token: TOKENS.editor, body })
      for (const body of [{ until: toIso(now) }, { since: 5 }]) {
        for (const scope of ["/webhooks/recover", "/surveys/srv_main/webhook/recover"]) {
          const res = yield* post(scope, JSON.stringify(body))
          expect(res.status, `${scope} ${JSON.stringify(body)}`).toBe(400)
          const error = bodyOf(IssueBody, res)
          expect(error.code).toBe("invalid_request")
          expect(error.issues.map((i) => i.path), JSON.stringify(body)).toContain("since")
        }
      }
      expect((yield* post("/webhooks/recover", JSON.stringify("not json"))).status).toBe(400)
      const since = { since: toIso(now - day) }
      expect(yield* outcomeOf(recover(since, undefined, TOKENS.viewer))).toBe("Forbidden")
      expect(yield* outcomeOf(recover(since, undefined, TOKENS.limited))).toBe("Forbidden")
      expect(yield* outcomeOf(recover(since, "srv_draft", TOKENS.limited))).toBe("Forbidden")
      expect(yield* outcomeOf(recover(since, "srv_other"))).toBe("NotFound")
      // No survey webhook: 400.
      expect(yield* outcomeOf(recover(since, "srv_main"))).toBe("InvalidRequest")
      expect(yield* deliveries).toEqual([])
      // The one event is 40 days old: outside any window that may be asked for.
      expect(yield* recover({ since: toIso(now - 30 * day) })).toEqual({ queued: 0 })
    }).pipe(Effect.provide(WebhookWorld({ pollInterval: Duration.days(1), purgeInterval: Duration.days(1) })), Effect.scoped))
})

describe("event retention", () => {
  it.effect("events are kept 30 days for redelivery, then purged with their finished deliveries", () =>
    Effect.gen(function*() {
      const target = yield* receiver()
      yield* register(target.url)
      const old = yield* emit("survey.published", "srv_main")
      const older = yield* emit("survey.closed", "srv_main")
      yield* advance("1 day")
      yield* eventually(deliveries, (all) => all.length === 2 && all.every((d) => d.state === "delivered"))
      yield* advance("28 days")
      yield* purgeOnce
      const sql = yield* SqlClient.SqlClient
      const ids = sql`SELECT id FROM events ORDER BY seq`.pipe(
        Effect.orDie,
        Effect.map((rows) => decodeAs(Schema.Array(Schema.Struct({ id: Schema.String })), rows))
      )
      expect((yield* ids).map((e) => e.id)).toEqual([old.id, older.id])
      // The typed call succeeds only on the declared 202.
      yield* redeliver(old.id)
      yield* advance("1 day")
      yield* eventually(deliveries, (all) => all.every((d) => d.state === "delivered"))
      // Past 30 days the periodic purge removes it with its finished delivery.
      yield* advance("2 days")
      yield* eventually(ids, (rows) => rows.length === 0)
      expect(yield* deliveries).toEqual([])
      expect(yield* outcomeOf(redeliver(old.id))).toBe("NotFound")
      // An event not yet fanned out stays, whatever its age.
      const redelivery = yield* RedeliveryService
      const webhooks = yield* WebhookRepo
      const fresh = yield* emit("survey.closed", "srv_main")
      expect(yield* redelivery.purgeEvents((yield* TestClock.currentTimeMillis) + 1)).toBe(0)
      expect((yield* ids).map((e) => e.id)).toEqual([fresh.id])
      expect((yield* webhooks.find(WorkspaceId.make("ws_a"), null))._tag).toBe("Some")
    }).pipe(
      // Purged one event at a time here.
      Effect.provide(WebhookWorld({ pollInterval: Duration.days(1), purgeInterval: Duration.days(1), batch: 1 })),
      Effect.scoped
    ))
})

describe("a recovery storm", () => {
  // Recovery works through the window 7 events at a time here.
  it.live("does not starve another webhook: each keeps its share of the worker", () =>
    Effect.gen(function*() {
      const release = yield* Deferred.make<void>()
      const released = Effect.runPromise(Deferred.await(release))
      const stuck = yield* receiver(() => released.then(() => new Response("ok")))
      const other = yield* receiver()
      for (let i = 0; i < 40; i++) yield* emit("response.completed", "srv_draft")
      const since = toIso((yield* TestClock.currentTimeMillis) - 60_000)
      yield* register(stuck.url)
      expect(yield* recover({ since })).toEqual({ queued: 40 })
      // The stuck webhook holds its share of slots and no more.
      yield* eventually(stuck.received, (all) => all.length === 2)
      yield* register(other.url, "srv_main")
      const event = yield* emit("survey.closed", "srv_main")
      const [arrived] = yield* eventually(other.received, (all) => all.length === 1)
      expect(arrived?.headers["webhook-id"]).toBe(event.id)
      expect((yield* stuck.received).length).toBeLessThanOrEqual(2)
      yield* Deferred.succeed(release, undefined)
      yield* eventually(deliveries, (all) => all.length === 42 && all.every((d) => d.state === "delivered"), {
        tries: 1000
      })
    }).pipe(Effect.provide(WebhookWorld({ maxConcurrent: 4, perWebhook: 2, batch: 7 })), Effect.scoped))
})
