import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import { Webhook } from "standardwebhooks"
import { EventEnvelope } from "../src/Domain/Event.js"
import { SurveyLifecycle } from "../src/Surveys/SurveyLifecycle.js"
import { TOKENS } from "./support/Fixtures.js"
import { clientFor } from "./support/ApiClient.js"
import { decodeAs } from "./support/TestServer.js"
import { eventually, receiver } from "./support/WebhookReceiver.js"
import { claimedIn, complete, deliveries, loggedAttempts, register, WebhookWorld, workerAsleep } from "./support/WebhookWorld.js"
import { advance } from "./support/Advance.js"
import { SurveyId } from "../src/Domain/Ids.js"

describe("webhook delivery", () => {
  it.live("fans one event out to the survey and the workspace webhook, each signed with its own secret", () =>
    Effect.gen(function*() {
      const surveyTarget = yield* receiver()
      const workspaceTarget = yield* receiver()
      const surveySecret = yield* register(surveyTarget.url, "srv_draft")
      const workspaceSecret = yield* register(workspaceTarget.url)
      const lifecycle = yield* SurveyLifecycle
      yield* lifecycle.apply(SurveyId.make("srv_draft"), "publish")
      const completed = yield* complete("srv_main")

      const [toSurvey] = yield* eventually(surveyTarget.received, (all) => all.length >= 1)
      const toWorkspace = yield* eventually(workspaceTarget.received, (all) => all.length >= 2)
      if (toSurvey === undefined) return yield* Effect.dieMessage("no delivery to the survey webhook")
      const published = decodeAs(EventEnvelope, new Webhook(surveySecret).verify(toSurvey.body, toSurvey.headers))
      expect(published["type"]).toBe("survey.published")
      expect(published["formId"]).toBe("srv_draft")
      expect(toSurvey.headers["x-service-event-id"]).toBe(published["id"])
      expect(() => new Webhook(workspaceSecret).verify(toSurvey.body, toSurvey.headers)).toThrow()

      const verified = toWorkspace.map((d) => decodeAs(EventEnvelope, new Webhook(workspaceSecret).verify(d.body, d.headers)))
      expect(verified.map((e) => e["id"]).sort()).toEqual([published["id"], completed.id].sort())
      const completion = verified.find((e) => e["id"] === completed.id)
      expect(completion?.["data"]).toEqual({ responseId: "rsp_1", externalUserId: null })

      const api = yield* clientFor(TOKENS.editor)
      const surveyLog = yield* eventually(
        api.surveyWebhook.deliveries({ path: { id: SurveyId.make("srv_draft") }, urlParams: {} }).pipe(Effect.orDie),
        (log) => log.data.length === 1
      )
      expect(surveyLog.data[0]).toMatchObject({ eventId: published["id"], eventType: "survey.published", surveyId: "srv_draft", ok: true })
      const workspaceLog = yield* eventually(
        api.workspaceWebhooks.deliveries({ urlParams: {} }).pipe(Effect.orDie),
        (log) => log.data.length === 2
      )
      expect(workspaceLog.data.map((a) => a.eventId).sort()).toEqual([published["id"], completed.id].sort())
      // The survey log holds only the survey webhook's attempts.
      const mainLog = yield* api.surveyWebhook.deliveries({ path: { id: SurveyId.make("srv_main") }, urlParams: {} })
      expect(mainLog).toEqual({ data: [] })
      expect((yield* deliveries).every((d) => d.state === "delivered")).toBe(true)
    }).pipe(Effect.provide(WebhookWorld()), Effect.scoped))

  it.effect("retries on the decisions §7 schedule with at most 10% jitter, then gives up", () =>
    Effect.gen(function*() {
      const target = yield* receiver(() => new Response("down", { status: 500 }))
      const secret = yield* register(target.url)
      const event = yield* complete("srv_main")
      // The outbox is polled hourly here, so that the clock moves in a few steps.
      yield* advance("1 hour")
      yield* eventually(loggedAttempts, (all) => all.length === 1)
      const expected = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]
      for (const [index, delay] of expected.entries()) {
        // The previous attempt is settled and the worker has gone back to sleep.
        yield* workerAsleep
        const before = yield* loggedAttempts
        const previous = before[before.length - 1]
        const [delivery] = yield* deliveries
        if (previous === undefined || delivery === undefined) return yield* Effect.dieMessage("no delivery")
        expect(delivery.state).toBe("pending")
        expect(delivery.attempts).toBe(index + 1)
        const wait = delivery.nextAttemptAt - previous.attemptedAt
        expect(wait, `delay ${index + 1}`).toBeGreaterThanOrEqual(delay)
        expect(wait, `delay ${index + 1}`).toBeLessThanOrEqual(delay * 1.1)
        // Just before the due time the worker claims nothing and sleeps until at least the due time...
        const now = yield* TestClock.currentTimeMillis
        yield* advance(Duration.millis(delivery.nextAttemptAt - now - 1))
        const quiet = yield* workerAsleep
        expect(claimedIn(quiet)).toBe(0)
        expect(quiet.sleepUntil).toBeGreaterThanOrEqual(delivery.nextAttemptAt)
        // ...and at the due time the next attempt runs.
        yield* advance("1 millis")
        const after = yield* eventually(loggedAttempts, (all) => all.length === index + 2)
        expect(after[index + 1]?.attemptedAt).toBe(delivery.nextAttemptAt)
      }
      const [last] = yield* deliveries
      expect(last?.state).toBe("given_up")
      expect(last?.attempts).toBe(8)
      yield* workerAsleep
      yield* advance("10 days")
      expect(claimedIn(yield* workerAsleep)).toBe(0)
      expect(yield* loggedAttempts).toHaveLength(8)
      const received = yield* target.received
      expect(received).toHaveLength(8)
      for (const request of received) {
        expect(request.headers["webhook-id"]).toBe(event.id)
        const timestamp = Number(request.headers["webhook-timestamp"])
        // A retry is signed again at its own time, with the same event id.
        expect(request.headers["webhook-signature"]).toBe(
          new Webhook(secret).sign(event.id, new Date(timestamp * 1000), request.body)
        )
      }
      const log = yield* loggedAttempts
      expect(log.every((a) => a.ok === 0 && a.responseStatus === 500 && a.error === "HTTP 500")).toBe(true)
    }).pipe(Effect.provide(WebhookWorld({ pollInterval: Duration.hours(1) })), Effect.scoped))
})
