import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { SurveyId } from "../src/Domain/Ids.js"
import { clientAt, completeShortAt } from "./support/ApiClient.js"
import { TOKENS } from "./support/Fixtures.js"
import { respondentFixture } from "./support/RespondentFixtures.js"
import { PROCESS_TEST_TIMEOUT, request, serveProcess, sharedDatabase } from "./support/ServeProcess.js"
import { eventually, receiver } from "./support/WebhookReceiver.js"

const START = "2031-05-14T22:30:00.000Z"
const short = { id: SurveyId.make("srv_short") }

const SurveyPage = Schema.parseJson(Schema.Struct({ respondentToken: Schema.String }))
const Envelope = Schema.parseJson(Schema.Struct({ id: Schema.String, type: Schema.String, timestamp: Schema.String }))


// An integrator's tests on a clock that stands: nothing here moves the clock, and every wait ends
// when the receiver or the service shows what was awaited (v1-extensions §X5.1).
describe("serve --test-clock, while the clock stands", () => {
  it.live("delivers a completed response, a test event and a redelivery at once, at the simulated instant", () =>
    Effect.gen(function*() {
      const { flags } = yield* sharedDatabase(respondentFixture)
      const target = yield* receiver()
      const server = yield* serveProcess([...flags, "--test-clock", START])
      const editor = yield* clientAt(server.base, TOKENS.editor)
      yield* editor.workspaceWebhooks.put({ payload: { targetUrl: target.url } })

      const responseId = yield* completeShortAt(server.base)
      const [completed] = yield* target.receivedAtLeast(1)
      const event = Schema.decodeUnknownSync(Envelope)(completed?.body)
      expect(event.type).toBe("response.completed")
      expect(event.timestamp).toBe(START)
      expect(completed?.body).toContain(responseId)
      // Recorded at the simulated instant, which has not moved.
      const log = yield* eventually(editor.workspaceWebhooks.deliveries({ urlParams: {} }).pipe(Effect.orDie), (l) => l.data.length === 1)
      expect(log.data[0]).toMatchObject({ ok: true, attemptedAt: START, eventId: event.id })

      const tested = yield* editor.workspaceWebhooks.test()
      expect(tested.delivered).toBe(true)
      const afterTest = yield* target.receivedAtLeast(2)
      expect(Schema.decodeUnknownSync(Envelope)(afterTest[1]?.body).type).toBe("webhook.test")

      const queued = yield* editor.workspaceWebhooks.redeliver({ path: { eventId: event.id } })
      expect(queued).toEqual({ eventId: event.id, queued: true })
      const again = yield* target.receivedAtLeast(3)
      expect(again[2]?.headers["webhook-id"]).toBe(event.id)
      expect(Schema.decodeUnknownSync(Envelope)(again[2]?.body).timestamp).toBe(START)

      // The analytics include the response as they would in production, and the clock stood throughout.
      const viewer = yield* clientAt(server.base, TOKENS.viewer)
      yield* eventually(viewer.analytics.get({ path: short }).pipe(Effect.orDie), (a) => a.responseCount === 1)
      expect((yield* editor.testClock.get()).now).toBe(START)
    }).pipe(Effect.scoped), PROCESS_TEST_TIMEOUT)

  it.live("serves an embed session's page, and stamps every answer with the simulated time", () =>
    Effect.gen(function*() {
      const { flags } = yield* sharedDatabase(respondentFixture)
      const server = yield* serveProcess([...flags, "--test-clock", START])
      const editor = yield* clientAt(server.base, TOKENS.editor)
      const session = yield* editor.embedSessions.create({ path: short, payload: { externalUserId: "ci-user" }, headers: {} })
      expect(session.expiresAt).toBe("2031-05-14T23:30:00.000Z")
      // Raw: the embed page is a survey page, outside the HttpApi.
      const page = yield* request(session.embedUrl, { headers: { accept: "application/json" } })
      expect(page.status, page.text).toBe(200)
      const respondent = yield* clientAt(server.base, Schema.decodeUnknownSync(SurveyPage)(page.text).respondentToken)
      const { responseId } = yield* respondent.respondent.start({
        payload: { answers: [{ questionId: "q_short_text", values: ["from the embed"] }], finished: true },
        headers: {}
      })
      expect(responseId).toMatch(/^rsp_/)

      // Every answer carries the simulated time: API, survey pages, errors, the health probe.
      for (const path of ["/api/v1/surveys", "/s/srv_short", "/api/v1/nowhere", "/healthz"]) {
        const res = yield* request(`${server.base}${path}`, { headers: { authorization: `Bearer ${TOKENS.editor}` } })
        expect(res.headers.get("test-clock"), path).toBe(START)
      }
      const document = yield* request(`${server.base}/openapi.json`)
      expect(document.headers.get("test-clock")).toBe(START)
      expect(document.text).toContain("\"Test-Clock\"")
    }).pipe(Effect.scoped), PROCESS_TEST_TIMEOUT)
})
