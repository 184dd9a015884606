import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Metric, type MetricState, TestClock } from "effect"
import { Webhook } from "standardwebhooks"
import { webhookDeliveries } from "../src/Telemetry/Metrics.js"
import { toIso } from "../src/Domain/Time.js"
import { DeliveryLog, Recovery, WebhookRegistered, WebhookSettings } from "../src/Webhooks/Api.js"
import { advance } from "./support/Advance.js"
import { TOKENS } from "./support/Fixtures.js"
import { bodyOf, call, ErrorBody, get } from "./support/TestServer.js"
import { eventually, receiver } from "./support/WebhookReceiver.js"
import { complete, deliveries, loggedAttempts, WebhookWorld } from "./support/WebhookWorld.js"

/** The outbox is polled hourly here, so that the clock moves only when the test moves it. */
const world = WebhookWorld({ pollInterval: Duration.hours(1) })

const settingsOf = (path: string) => Effect.map(get(path, TOKENS.editor), (res) => bodyOf(WebhookSettings, res))

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
      const path = "/api/v1/surveys/srv_main/webhook"
      const put = yield* call("PUT", path, {
        token: TOKENS.editor,
        body: JSON.stringify({
          targetUrl: target.url,
          events: ["response.created", "response.completed"],
          maxAttemptsPerSecond: 5
        })
      })
      const { signingSecret } = bodyOf(WebhookRegistered, put)

      // A 410 disables it, and is counted as what it did.
      const before = yield* counts
      const first = yield* complete("srv_main")
      yield* advance("1 hour")
      yield* settled(1)
      const afterGone = yield* counts
      expect(afterGone.disabled - before.disabled).toBe(1)
      expect(afterGone.retrying - before.retrying).toBe(0)
      const disabled = yield* settingsOf(path)
      expect(disabled).toMatchObject({ enabled: false, disabledReason: "gone", maxAttemptsPerSecond: 5 })

      // Operations that need an enabled webhook point to enable.
      const test = yield* call("POST", `${path}/test`, { token: TOKENS.editor })
      expect(test.status).toBe(400)
      expect(bodyOf(ErrorBody, test).message).toContain(`POST /surveys/srv_main/webhook/enable`)

      // Missed while disabled.
      const missed = yield* complete("srv_main", "ws_a", "rsp_2")
      yield* advance("1 hour")

      // A viewer may not enable it; nothing changes.
      expect((yield* call("POST", `${path}/enable`, { token: TOKENS.viewer })).status).toBe(403)
      expect(yield* settingsOf(path)).toEqual(disabled)

      status = 200
      const enabled = yield* call("POST", `${path}/enable`, { token: TOKENS.editor })
      expect(enabled.status).toBe(200)
      const expected = {
        enabled: true,
        targetUrl: target.url,
        events: ["response.completed", "response.created"],
        disabledReason: null,
        previousSecretExpiresAt: null,
        maxAttemptsPerSecond: 5
      }
      expect(bodyOf(WebhookSettings, enabled)).toEqual(expected)
      expect(yield* settingsOf(path)).toEqual(expected)
      // On an enabled webhook it changes nothing.
      expect(bodyOf(WebhookSettings, yield* call("POST", `${path}/enable`, { token: TOKENS.editor }))).toEqual(expected)

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
      const recovered = yield* call("POST", `${path}/recover`, {
        token: TOKENS.editor,
        body: JSON.stringify({ since: toIso(start), until: toIso((yield* TestClock.currentTimeMillis) + 1) })
      })
      expect(recovered.status).toBe(202)
      expect(bodyOf(Recovery, recovered)).toEqual({ queued: 2 })
      yield* advance("1 hour")
      const received = yield* eventually(target.received, (all) => all.length === 4)
      expect(received.slice(2).map((r) => r.headers["webhook-id"]).sort()).toEqual([first.id, missed.id].sort())
      expect(yield* settingsOf(path)).toEqual(expected)
    }).pipe(Effect.provide(world), Effect.scoped))

  it.effect("the workspace webhook: enable keeps its settings; no webhook: 400; a survey-limited key: 403", () =>
    Effect.gen(function*() {
      const path = "/api/v1/webhooks"
      const none = yield* call("POST", `${path}/enable`, { token: TOKENS.editor })
      expect(none.status).toBe(400)
      expect(bodyOf(ErrorBody, none).code).toBe("invalid_request")
      expect((yield* call("POST", "/api/v1/surveys/srv_main/webhook/enable", { token: TOKENS.editor })).status).toBe(400)

      let status = 410
      const target = yield* receiver(() => new Response("", { status }))
      yield* call("PUT", path, {
        token: TOKENS.editor,
        body: JSON.stringify({ targetUrl: target.url, events: ["survey.closed", "response.completed"] })
      })
      yield* complete("srv_main")
      yield* advance("1 hour")
      yield* settled(1)
      expect(yield* settingsOf(path)).toMatchObject({ enabled: false, disabledReason: "gone" })
      expect((yield* call("POST", `${path}/enable`, { token: TOKENS.limited })).status).toBe(403)
      status = 200
      expect(bodyOf(WebhookSettings, yield* call("POST", `${path}/enable`, { token: TOKENS.editor }))).toEqual({
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
      const path = "/api/v1/surveys/srv_main/webhook"
      const put = yield* call("PUT", path, { token: TOKENS.editor, body: JSON.stringify({ targetUrl: target.url }) })
      const oldSecret = bodyOf(WebhookRegistered, put).signingSecret
      const before = yield* counts
      yield* complete("srv_main")
      yield* advance("1 hour")
      yield* settled(1)
      expect((yield* counts).retrying - before.retrying).toBe(1)
      expect((yield* deliveries).map((d) => d.state)).toEqual(["pending"])

      expect((yield* call("DELETE", path, { token: TOKENS.viewer })).status).toBe(403)
      expect((yield* settingsOf(path)).enabled).toBe(true)
      const removed = yield* call("DELETE", path, { token: TOKENS.limited })
      expect(removed.status).toBe(204)
      expect(yield* settingsOf(path)).toEqual({
        enabled: false,
        targetUrl: null,
        events: [],
        disabledReason: null,
        previousSecretExpiresAt: null,
        maxAttemptsPerSecond: null
      })
      // Its pending delivery ends unsent; its log stays readable.
      expect((yield* deliveries).map((d) => d.state)).toEqual(["given_up"])
      const log = bodyOf(DeliveryLog, yield* get(`${path}/deliveries`, TOKENS.editor))
      expect(log.data).toHaveLength(1)
      // Again: nothing to remove, still 204; another survey's key: 403.
      expect((yield* call("DELETE", path, { token: TOKENS.editor })).status).toBe(204)
      expect((yield* call("DELETE", "/api/v1/surveys/srv_draft/webhook", { token: TOKENS.limited })).status).toBe(403)
      expect((yield* call("DELETE", "/api/v1/surveys/srv_nope/webhook", { token: TOKENS.editor })).status).toBe(404)

      // Nothing is queued any more; the retry's time passes without an attempt.
      yield* complete("srv_main", "ws_a", "rsp_2")
      yield* advance("11 hours")
      expect(yield* target.received).toHaveLength(1)
      expect(yield* deliveries).toHaveLength(1)

      // A later PUT registers a new webhook, with a new secret, receiving what comes after it.
      const again = bodyOf(
        WebhookRegistered,
        yield* call("PUT", path, { token: TOKENS.editor, body: JSON.stringify({ targetUrl: target.url }) })
      )
      expect(again.signingSecret).not.toBe(oldSecret)
      yield* complete("srv_main", "ws_a", "rsp_3")
      yield* advance("1 hour")
      yield* eventually(target.received, (all) => all.length === 2)
    }).pipe(Effect.provide(world), Effect.scoped))
})
