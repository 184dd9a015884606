import { SqlClient } from "@effect/sql"
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { AggregatorLive } from "../src/Analytics/Aggregator.js"
import { Analytics } from "../src/Domain/Analytics.js"
import { EventEnvelope } from "../src/Domain/Event.js"
import { ResponseId, SurveyId } from "../src/Domain/Ids.js"
import { DeliveryLog } from "../src/Webhooks/Api.js"
import { clientFor } from "./support/ApiClient.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { Webhook } from "standardwebhooks"
import { bodyOf, call, decodeAs, get, TestServer } from "./support/TestServer.js"
import { eventually, receiver } from "./support/WebhookReceiver.js"
import { register, WebhookWorld } from "./support/WebhookWorld.js"
import { advance } from "./support/Advance.js"

const Payload = Schema.Struct({ payload: Schema.String })
const SurveyPageBody = Schema.Struct({ respondentToken: Schema.String })

const main = { id: SurveyId.make("srv_main") }

/**
 * One respondent's way through the service: an embed session created with an API key, the page
 * opened as a native app would, answers saved and finished through the respondent API, then the
 * response, its event and the analytics read back.
 */
layer(TestServer(baseFixture))("a respondent's journey through every part", (it) => {
  it.effect("embed session → respondent API → Response, outbox event and analytics", () =>
    Effect.gen(function*() {
      yield* Layer.launch(AggregatorLive).pipe(Effect.forkScoped)
      yield* advance("1 second")
      const viewer = yield* clientFor(TOKENS.viewer)
      const before = yield* viewer.analytics.get({ path: main })

      const editor = yield* clientFor(TOKENS.editor)
      const created = yield* editor.embedSessions.create({
        path: main,
        payload: { externalUserId: "journey-user" },
        headers: {}
      })
      // Raw: the embed page is a survey page, outside the HttpApi.
      const embedPath = new URL(created.embedUrl).pathname
      const page = yield* call("GET", embedPath, { headers: { accept: "application/json" } })
      expect(page.status).toBe(200)
      const respondent = yield* clientFor(bodyOf(SurveyPageBody, page).respondentToken)

      const { responseId } = yield* respondent.respondent.start({
        payload: { answers: [{ questionId: "q_pick", values: ["b", "c"] }], finished: false },
        headers: {}
      })
      const finished = yield* respondent.respondent.save({
        path: { responseId },
        payload: { answers: [{ questionId: "q_num", values: ["7"] }], finished: true }
      })
      expect(finished).toEqual({ responseId, completed: true })

      const response = yield* viewer.responses.get({ path: { ...main, responseId: ResponseId.make(responseId) } })
      expect(response).toMatchObject({
        id: responseId,
        externalUserId: "journey-user",
        completed: true,
        answers: [
          { fieldId: "q_pick", type: "checkbox", value: "[\"b\",\"c\"]", values: ["b", "c"] },
          { fieldId: "q_num", type: "number", value: "7", values: ["7"] }
        ]
      })
      const sql = yield* SqlClient.SqlClient
      const events = decodeAs(Schema.Array(Payload), yield* sql`SELECT payload FROM events WHERE type = 'response.completed'`)
      const envelopes = events.map((e) => decodeAs(Schema.parseJson(EventEnvelope), e.payload))
      expect(envelopes.filter((e) => e.data.responseId === responseId)).toEqual([
        expect.objectContaining({ formId: "srv_main", data: expect.objectContaining({ externalUserId: "journey-user" }) })
      ])
      // The used embed URL does not load twice.
      expect((yield* call("GET", embedPath, { headers: { accept: "application/json" } })).status).toBe(410)

      yield* advance("1 second")
      const after = yield* viewer.analytics.get({ path: main })
      expect(after.responseCount).toBe(before.responseCount + 1)
      expect(after.completedCount).toBe(before.completedCount + 1)
      const pick = (a: Analytics) => a.questions.find((q) => q.id === "q_pick")
      expect(pick(after)?.respondentCount).toBe((pick(before)?.respondentCount ?? 0) + 1)
      const optionCount = (a: Analytics, value: string) => pick(a)?.options.find((o) => o.value === value)?.count ?? 0
      expect(optionCount(after, "b")).toBe(optionCount(before, "b") + 1)
      expect(optionCount(after, "a")).toBe(optionCount(before, "a"))
    }).pipe(Effect.scoped))
})

describe("a completion reaches the integrator", () => {
  it.live("respondent API completion → signed deliveries to the survey and workspace webhooks, in both logs", () =>
    Effect.gen(function*() {
      const surveyTarget = yield* receiver()
      const workspaceTarget = yield* receiver()
      const surveySecret = yield* register(surveyTarget.url, "srv_main")
      const workspaceSecret = yield* register(workspaceTarget.url)

      const editor = yield* clientFor(TOKENS.editor)
      const created = yield* editor.embedSessions.create({
        path: main,
        payload: { externalUserId: "integrator-42" },
        headers: {}
      })
      const page = yield* call("GET", new URL(created.embedUrl).pathname, { headers: { accept: "application/json" } })
      const respondent = yield* clientFor(bodyOf(SurveyPageBody, page).respondentToken)
      const { responseId } = yield* respondent.respondent.start({
        payload: { answers: [{ questionId: "q_pick", values: ["a"] }], finished: true },
        headers: {}
      })

      const [toSurvey] = yield* eventually(surveyTarget.received, (all) => all.length >= 1)
      const [toWorkspace] = yield* eventually(workspaceTarget.received, (all) => all.length >= 1)
      if (toSurvey === undefined || toWorkspace === undefined) return yield* Effect.dieMessage("nothing received")
      const event = decodeAs(EventEnvelope, new Webhook(surveySecret).verify(toSurvey.body, toSurvey.headers))
      const same = decodeAs(EventEnvelope, new Webhook(workspaceSecret).verify(toWorkspace.body, toWorkspace.headers))
      expect(event["id"]).toBe(same["id"])
      expect(event).toMatchObject({
        type: "response.completed",
        formId: "srv_main",
        data: { responseId, externalUserId: "integrator-42", response: { id: responseId, completed: true } }
      })
      expect(toSurvey.headers["x-service-event-id"]).toBe(event["id"])

      // The event's response is what the API answers for it. Raw: two wire forms compared whole.
      const read = yield* get(`/api/v1/surveys/srv_main/responses/${responseId}`, TOKENS.viewer)
      expect(event["data"]["response"]).toEqual(read.body)

      // Raw: the logs must not carry the payload, a field the typed client would drop unseen.
      for (const path of ["/api/v1/surveys/srv_main/webhook/deliveries", "/api/v1/webhooks/deliveries"]) {
        const log = yield* eventually(
          Effect.map(get(path, TOKENS.viewer), (r) => bodyOf(DeliveryLog, r)),
          (l) => l.data.length >= 1
        )
        expect(log.data[0]).toMatchObject({ eventId: event["id"], ok: true, responseStatus: 200 })
        expect(JSON.stringify(log)).not.toContain("integrator-42")
      }
    }).pipe(Effect.provide(WebhookWorld()), Effect.scoped))
})
