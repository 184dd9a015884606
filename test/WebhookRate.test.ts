import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { SurveyId } from "../src/Domain/Ids.js"
import type { WebhookTarget } from "../src/Webhooks/Api.js"
import { clientAt, clientFor } from "./support/ApiClient.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { PROCESS_TEST_TIMEOUT, serveProcess, sharedDatabase, within } from "./support/ServeProcess.js"
import { bodyOf, call, ErrorBody, TestDatabase, TestServer } from "./support/TestServer.js"
import { eventually, receiver } from "./support/WebhookReceiver.js"
import { complete, deliveries, loggedAttempts, WebhookWorld } from "./support/WebhookWorld.js"

const perSecond = 5
// Enough for more than 10 s of attempts at that rate: the span the rate is measured over.
const events = 60

/**
 * What the receiver saw of a rate of `perSecond`: in any 10 s at most 10 % more attempts than the
 * rate allows, and from the first attempt to the last at least 90 % of one interval per attempt.
 * Without a rate, they would all arrive within a fraction of a second.
 */
const expectRateHeld = (arrivals: ReadonlyArray<number>) => {
  const interval = 1000 / perSecond
  for (const [i, start] of arrivals.entries()) {
    const inTenSeconds = arrivals.slice(i).filter((at) => at < start + 10_000).length
    expect(inTenSeconds, `from arrival ${i}`).toBeLessThanOrEqual(perSecond * 10 * 1.1)
  }
  const span = (arrivals[arrivals.length - 1] ?? 0) - (arrivals[0] ?? 0)
  expect(span).toBeGreaterThanOrEqual((arrivals.length - 1) * interval * 0.9)
}

/** A receiver that notes when each request arrived, in real time. */
const timedReceiver = Effect.gen(function*() {
  const arrivals: Array<number> = []
  const target = yield* receiver(() => {
    arrivals.push(performance.now())
    return new Response("ok")
  })
  return { target, arrivals } as const
})

describe("a webhook's delivery rate", () => {
  it.live("holds attempts to the rate, in due order, and waiting is not an attempt", () =>
    Effect.gen(function*() {
      const { arrivals, target } = yield* timedReceiver
      // The typed call succeeds only on the declared 200.
      const api = yield* clientFor(TOKENS.editor)
      yield* api.workspaceWebhooks.put({ payload: { targetUrl: target.url, maxAttemptsPerSecond: perSecond } })
      const ids: Array<string> = []
      for (let i = 0; i < events; i++) ids.push((yield* complete("srv_main", "ws_a", `rsp_${i}`)).id)
      const received = yield* target.receivedAtLeast(events)
      expectRateHeld(arrivals)
      // Due order: each event attempted no earlier than the one before it.
      // The last outcomes may still be on their way to the database.
      const log = yield* eventually(loggedAttempts, (all) => all.length >= events)
      expect(log).toHaveLength(events)
      const attemptedAt = new Map(log.map((attempt) => [attempt.eventId, attempt.attemptedAt]))
      const times = ids.map((id) => attemptedAt.get(id) ?? Number.NaN)
      expect(times).toEqual([...times].sort((a, b) => a - b))
      expect(new Set(received.map((r) => r.headers["webhook-id"]))).toEqual(new Set(ids))
      // Waiting for a turn is neither a failure nor an attempt.
      const states = yield* eventually(deliveries, (all) => all.every((d) => d.leaseUntil === 0))
      expect(states.every((d) => d.state === "delivered" && d.attempts === 1)).toBe(true)
      expect(log.every((attempt) => attempt.ok === 1)).toBe(true)
    }).pipe(Effect.provide(WebhookWorld()), Effect.scoped), 60_000)

  it.live("a test event takes its turn too", () =>
    Effect.gen(function*() {
      const { arrivals, target } = yield* timedReceiver
      const api = yield* clientFor(TOKENS.editor)
      yield* api.workspaceWebhooks.put({ payload: { targetUrl: target.url, maxAttemptsPerSecond: 1 } })
      for (let i = 0; i < 3; i++) {
        // Raw: the answer's exact bytes, which the decoded value would not show (a field more).
        const res = yield* call("POST", "/api/v1/webhooks/test", { token: TOKENS.editor })
        expect(res.text).toBe(`{"delivered":true}`)
      }
      expect(arrivals).toHaveLength(3)
      // One a second, as the service made them (the receiver's times add the network's jitter):
      // the second and third waited for their turn.
      const made = (yield* loggedAttempts).map((attempt) => attempt.attemptedAt)
      expect(made).toHaveLength(3)
      for (const [i, at] of made.slice(1).entries()) expect(at - (made[i] ?? 0)).toBeGreaterThanOrEqual(900)
    }).pipe(Effect.provide(WebhookWorld()), Effect.scoped))

  it.live("holds across two processes delivering from one database", () =>
    Effect.gen(function*() {
      const { arrivals, target } = yield* timedReceiver
      const { flags } = yield* sharedDatabase(baseFixture)
      const first = yield* serveProcess(flags)
      yield* serveProcess(flags)
      const api = yield* clientAt(first.base, TOKENS.editor)
      yield* api.workspaceWebhooks.put({ payload: { targetUrl: target.url, maxAttemptsPerSecond: perSecond } })
      // The events are written by a third party on the database, as a completion in either process would.
      const [flag, value] = flags
      const database = TestDatabase(
        undefined,
        flag === "--db" ? { databasePath: value ?? "" } : { databaseUrl: Redacted.make(value ?? "") }
      )
      yield* Effect.gen(function*() {
        for (let i = 0; i < events; i++) yield* complete("srv_main", "ws_a", `rsp_${i}`)
      }).pipe(Effect.provide(database))
      yield* within("every event at the receiver", target.receivedAtLeast(events))
      expectRateHeld(arrivals)
    }).pipe(Effect.scoped), PROCESS_TEST_TIMEOUT)
})

/** The workspace webhook or srv_main's, through the typed client. */
const webhookOf = (scope: "workspace" | "survey") =>
  Effect.map(clientFor(TOKENS.editor), (api) => {
    const srvMain = { path: { id: SurveyId.make("srv_main") } }
    return scope === "workspace"
      ? {
        path: "/api/v1/webhooks",
        settings: api.workspaceWebhooks.get({}),
        put: (payload: typeof WebhookTarget.Type) => api.workspaceWebhooks.put({ payload })
      }
      : {
        path: "/api/v1/surveys/srv_main/webhook",
        settings: api.surveyWebhook.get(srvMain),
        put: (payload: typeof WebhookTarget.Type) => api.surveyWebhook.put({ ...srvMain, payload })
      }
  })

layer(TestServer(baseFixture, { webhookAllowPrivateTargets: true }))(
  "maxAttemptsPerSecond in webhook settings",
  (it) => {
    it.effect("is null unless given, shown as given, and null again when a PUT leaves it out", () =>
      Effect.gen(function*() {
        for (const scope of ["workspace", "survey"] as const) {
          const webhook = yield* webhookOf(scope)
          const rateNow = Effect.map(webhook.settings, (settings) => settings.maxAttemptsPerSecond)
          expect(yield* rateNow).toBeNull()
          const targetUrl = "http://127.0.0.1:9/rate"
          // The typed PUTs succeed only on the declared 200.
          yield* webhook.put({ targetUrl })
          expect(yield* rateNow).toBeNull()
          for (const rate of [1, 1000, 7]) {
            yield* webhook.put({ targetUrl, maxAttemptsPerSecond: rate })
            expect(yield* rateNow).toBe(rate)
          }
          // Raw: values outside the contract, which the typed client refuses to send.
          for (const rate of [0, 1001, 1.5, "x", -3, true]) {
            const res = yield* call("PUT", webhook.path, {
              token: TOKENS.editor,
              body: JSON.stringify({ targetUrl, maxAttemptsPerSecond: rate })
            })
            expect(res.status, String(rate)).toBe(400)
            const error = bodyOf(ErrorBody, res)
            expect(error.code).toBe("invalid_request")
            expect(error.issues?.map((issue) => issue.path)).toContain("maxAttemptsPerSecond")
            expect(yield* rateNow).toBe(7)
          }
          yield* webhook.put({ targetUrl, maxAttemptsPerSecond: null })
          expect(yield* rateNow).toBeNull()
          yield* webhook.put({ targetUrl, maxAttemptsPerSecond: 3 })
          yield* webhook.put({ targetUrl })
          expect(yield* rateNow).toBeNull()
        }
      }))
  }
)
