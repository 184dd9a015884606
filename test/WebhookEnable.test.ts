import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Metric, type MetricState, TestClock } from "effect"
import { Webhook } from "standardwebhooks"
import { webhookDeliveries } from "../src/Telemetry/Metrics.js"
import { toIso } from "../src/Domain/Time.js"
import { SurveyId } from "../src/Domain/Ids.js"
import { advance } from "./support/Advance.js"
import { clientFor, outcomeOf } from "./support/ApiClient.js"
import { TOKENS } from "./support/Fixtures.js"
import { eventually, receiver } from "./support/WebhookReceiver.js"
import { complete, deliveries, loggedAttempts, WebhookWorld } from "./support/WebhookWorld.js"

/** The outbox is polled hourly here, so that the clock moves only when the test moves it. */
const world = WebhookWorld({ pollInterval: Duration.hours(1) })

const srvMain = { path: { id: SurveyId.make("srv_main") } }

/** How many attempts `webhook_deliveries_total` has counted with this outcome so far, in this process. */
const counted = (outcome: string) =>
  Effect.map(
    Metric.value(Metric.tagged(webhookDeliveries, "outcome", outcome)),
    (state: MetricState.MetricState.Counter<number>) => state.count
  )

/** Every outcome's count, for the difference an attempt makes. */
const counts = Effect.all({
  delivered: counted("delivered"),
  retrying: counted("retrying"),
  given_up: counted("given_up"),
  disabled: counted("disabled")
})

/** Waits for the deliveries to settle (no lease held) and the attempts to reach `count`. */
const settled = (count: number) =>
  Effect.gen(function*() {
    yield* eventually(loggedAttempts, (all) => all.length === count)
    yield* eventually(deliveries, (all) => all.every((d) => d.leaseUntil === 0))
  })

describe("POST …/webhook/enable (v1-extensions §X1.4a)", () => {
  it.effect("a webhook a 410 disabled delivers again with its secret, events and rate; recover sends what it missed", () =>
    Effect.gen(function*() {
      let status = 410
      yield* advance("1 day")
      const start = yield* TestClock.currentTimeMillis
      const target = yield* receiver(() => new Response("", { status }))
      const api = yield* clientFor(TOKENS.editor)
      const { signingSecret } = yield* api.surveyWebhook.put({
        ...srvMain,
        payload: {
          targetUrl: target.url,
          events: ["response.created", "response.completed"],
          maxAttemptsPerSecond: 5
        }
      })

      // A 410 disables it, and is counted as what it did.
      const before = yield* counts
      const first = yield* complete("srv_main")
      yield* advance("1 hour")
      yield* settled(1)
      const afterGone = yield* counts
      expect(afterGone.disabled - before.disabled).toBe(1)
      expect(afterGone.retrying - before.retrying).toBe(0)
      const disabled = yield* api.surveyWebhook.get(srvMain)
      expect(disabled).toMatchObject({ enabled: false, disabledReason: "gone", maxAttemptsPerSecond: 5 })

      // Operations that need an enabled webhook point to enable.
      const test = yield* Effect.flip(api.surveyWebhook.test(srvMain))
      expect(test._tag).toBe("InvalidRequest")
      expect(test.message).toContain(`POST /surveys/srv_main/webhook/enable`)

      // Missed while disabled.
      const missed = yield* complete("srv_main", "ws_a", "rsp_2")
      yield* advance("1 hour")

      // A viewer may not enable it; nothing changes.
      const viewer = yield* clientFor(TOKENS.viewer)
      expect(yield* outcomeOf(viewer.surveyWebhook.enable(srvMain))).toBe("Forbidden")
      expect(yield* api.surveyWebhook.get(srvMain)).toEqual(disabled)

      status = 200
      const enabled = yield* api.surveyWebhook.enable(srvMain)
      const expected = {
        enabled: true,
        targetUrl: target.url,
        events: ["response.completed", "response.created"],
        disabledReason: null,
        previousSecretExpiresAt: null,
        maxAttemptsPerSecond: 5
      }
      expect(enabled).toEqual(expected)
      expect(yield* api.surveyWebhook.get(srvMain)).toEqual(expected)
      // On an enabled webhook it changes nothing.
      expect(yield* api.surveyWebhook.enable(srvMain)).toEqual(expected)

      // New events flow again, signed with the secret the receiver already holds.
      const next = yield* complete("srv_main", "ws_a", "rsp_3")
      yield* advance("1 hour")
      yield* settled(2)
      const afterNext = yield* target.received
      const nextReceived = afterNext[afterNext.length - 1]
      if (nextReceived === undefined) return yield* Effect.dieMessage("nothing received")
      expect(nextReceived.headers["webhook-id"]).toBe(next.id)
      // The signature standardwebhooks computes with the kept secret (the test clock stamps the attempt).
      expect(nextReceived.headers["webhook-signature"]).toBe(
        new Webhook(signingSecret).sign(
          next.id,
          new Date(Number(nextReceived.headers["webhook-timestamp"]) * 1000),
          nextReceived.body
        )
      )

      // The recovery of the outage sends the two events that never arrived.
      // The typed call succeeds only on the declared 202.
      const recovered = yield* api.surveyWebhook.recover({
        ...srvMain,
        payload: { since: toIso(start), until: toIso((yield* TestClock.currentTimeMillis) + 1) }
      })
      expect(recovered).toEqual({ queued: 2 })
      yield* advance("1 hour")
      const received = yield* eventually(target.received, (all) => all.length === 4)
      expect(received.slice(2).map((r) => r.headers["webhook-id"]).sort()).toEqual([first.id, missed.id].sort())
      expect(yield* api.surveyWebhook.get(srvMain)).toEqual(expected)
    }).pipe(Effect.provide(world), Effect.scoped))

  it.effect("the workspace webhook: enable keeps its settings; no webhook: 400; a survey-limited key: 403", () =>
    Effect.gen(function*() {
      const api = yield* clientFor(TOKENS.editor)
      expect(yield* outcomeOf(api.workspaceWebhooks.enable({}))).toBe("InvalidRequest")
      expect(yield* outcomeOf(api.surveyWebhook.enable(srvMain))).toBe("InvalidRequest")

      let status = 410
      const target = yield* receiver(() => new Response("", { status }))
      yield* api.workspaceWebhooks.put({ payload: { targetUrl: target.url, events: ["survey.closed", "response.completed"] } })
      yield* complete("srv_main")
      yield* advance("1 hour")
      yield* settled(1)
      expect(yield* api.workspaceWebhooks.get({})).toMatchObject({ enabled: false, disabledReason: "gone" })
      const limited = yield* clientFor(TOKENS.limited)
      expect(yield* outcomeOf(limited.workspaceWebhooks.enable({}))).toBe("Forbidden")
      status = 200
      expect(yield* api.workspaceWebhooks.enable({})).toEqual({
        enabled: true,
        targetUrl: target.url,
        events: ["response.completed", "survey.closed"],
        disabledReason: null,
        previousSecretExpiresAt: null,
        maxAttemptsPerSecond: null
      })
      yield* complete("srv_main", "ws_a", "rsp_2")
      yield* advance("1 hour")
      yield* settled(2)
      expect((yield* loggedAttempts).map((a) => a.ok)).toEqual([0, 1])
    }).pipe(Effect.provide(world), Effect.scoped))
})

describe("DELETE /surveys/{id}/webhook (v1-extensions §X1.4a)", () => {
  it.effect("stops the survey's deliveries, keeps its log, and a later PUT registers anew", () =>
    Effect.gen(function*() {
      // The receiver asks for a retry in 10 hours, so that a delivery is pending when the webhook goes.
      const target = yield* receiver(() => new Response("", { status: 503, headers: { "retry-after": "36000" } }))
      const api = yield* clientFor(TOKENS.editor)
      const oldSecret = (yield* api.surveyWebhook.put({ ...srvMain, payload: { targetUrl: target.url } })).signingSecret
      const before = yield* counts
      yield* complete("srv_main")
      yield* advance("1 hour")
      yield* settled(1)
      expect((yield* counts).retrying - before.retrying).toBe(1)
      expect((yield* deliveries).map((d) => d.state)).toEqual(["pending"])

      const viewer = yield* clientFor(TOKENS.viewer)
      expect(yield* outcomeOf(viewer.surveyWebhook.delete(srvMain))).toBe("Forbidden")
      expect((yield* api.surveyWebhook.get(srvMain)).enabled).toBe(true)
      // The typed calls succeed only on the declared 204.
      const limited = yield* clientFor(TOKENS.limited)
      yield* limited.surveyWebhook.delete(srvMain)
      expect(yield* api.surveyWebhook.get(srvMain)).toEqual({
        enabled: false,
        targetUrl: null,
        events: [],
        disabledReason: null,
        previousSecretExpiresAt: null,
        maxAttemptsPerSecond: null
      })
      // Its pending delivery ends unsent; its log stays readable.
      expect((yield* deliveries).map((d) => d.state)).toEqual(["given_up"])
      const log = yield* api.surveyWebhook.deliveries({ ...srvMain, urlParams: {} })
      expect(log.data).toHaveLength(1)
      // Again: nothing to remove, still 204; another survey's key: 403.
      yield* api.surveyWebhook.delete(srvMain)
      expect(yield* outcomeOf(limited.surveyWebhook.delete({ path: { id: SurveyId.make("srv_draft") } }))).toBe("Forbidden")
      expect(yield* outcomeOf(api.surveyWebhook.delete({ path: { id: SurveyId.make("srv_nope") } }))).toBe("NotFound")

      // Nothing is queued any more; the retry's time passes without an attempt.
      yield* complete("srv_main", "ws_a", "rsp_2")
      yield* advance("11 hours")
      expect(yield* target.received).toHaveLength(1)
      expect(yield* deliveries).toHaveLength(1)

      // A later PUT registers a new webhook, with a new secret, receiving what comes after it.
      const again = yield* api.surveyWebhook.put({ ...srvMain, payload: { targetUrl: target.url } })
      expect(again.signingSecret).not.toBe(oldSecret)
      yield* complete("srv_main", "ws_a", "rsp_3")
      yield* advance("1 hour")
      yield* eventually(target.received, (all) => all.length === 2)
    }).pipe(Effect.provide(world), Effect.scoped))
})
