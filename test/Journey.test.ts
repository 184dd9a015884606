import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer, TestClock } from "effect"
import { AggregatorLive } from "../src/Analytics/Aggregator.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { call, get, TestServer } from "./support/TestServer.js"

interface Analytics {
  readonly responseCount: number
  readonly completedCount: number
  readonly questions: ReadonlyArray<{ id: string; respondentCount: number; options: ReadonlyArray<{ value: string; count: number }> }>
}

/**
 * One respondent's way through the service: an embed session created with an API key, the page
 * opened as a native app would, answers saved and finished through the respondent API, then the
 * response, its event and the analytics read back.
 */
layer(TestServer(baseFixture))("a respondent's journey through every part", (it) => {
  it.effect("embed session → respondent API → Response, outbox event and analytics", () =>
    Effect.gen(function*() {
      yield* Layer.launch(AggregatorLive).pipe(Effect.forkScoped)
      yield* TestClock.adjust("1 second")
      const before = (yield* get("/api/v1/surveys/srv_main/analytics", TOKENS.viewer)).body as Analytics

      const created = yield* call("POST", "/api/v1/surveys/srv_main/embed-sessions", {
        token: TOKENS.editor,
        body: JSON.stringify({ externalUserId: "journey-user" })
      })
      expect(created.status).toBe(201)
      const embedPath = new URL((created.body as { embedUrl: string }).embedUrl).pathname
      const page = yield* call("GET", embedPath, { headers: { accept: "application/json" } })
      expect(page.status).toBe(200)
      const respondentToken = (page.body as { respondentToken: string }).respondentToken

      const started = yield* call("POST", "/respond/v1/responses", {
        token: respondentToken,
        body: JSON.stringify({ answers: [{ questionId: "q_pick", values: ["b", "c"] }], finished: false })
      })
      expect(started.status).toBe(201)
      const responseId = (started.body as { responseId: string }).responseId
      const finished = yield* call("PATCH", `/respond/v1/responses/${responseId}`, {
        token: respondentToken,
        body: JSON.stringify({ answers: [{ questionId: "q_num", values: ["7"] }], finished: true })
      })
      expect(finished.status).toBe(200)

      const response = yield* get(`/api/v1/surveys/srv_main/responses/${responseId}`, TOKENS.viewer)
      expect(response.body).toMatchObject({
        id: responseId,
        externalUserId: "journey-user",
        completed: true,
        answers: [
          { fieldId: "q_pick", type: "checkbox", value: "[\"b\",\"c\"]", values: ["b", "c"] },
          { fieldId: "q_num", type: "number", value: "7", values: ["7"] }
        ]
      })
      const sql = yield* SqlClient.SqlClient
      const events = yield* sql<{ payload: string }>`SELECT payload FROM events WHERE type = 'response.completed'`
      const envelopes = events.map((e) => JSON.parse(e.payload) as { formId: string; data: { responseId: string; externalUserId: string } })
      expect(envelopes.filter((e) => e.data.responseId === responseId)).toEqual([
        expect.objectContaining({ formId: "srv_main", data: expect.objectContaining({ externalUserId: "journey-user" }) })
      ])
      // The used embed URL does not load twice.
      expect((yield* call("GET", embedPath, { headers: { accept: "application/json" } })).status).toBe(410)

      yield* TestClock.adjust("1 second")
      const after = (yield* get("/api/v1/surveys/srv_main/analytics", TOKENS.viewer)).body as Analytics
      expect(after.responseCount).toBe(before.responseCount + 1)
      expect(after.completedCount).toBe(before.completedCount + 1)
      const pick = (a: Analytics) => a.questions.find((q) => q.id === "q_pick")
      expect(pick(after)?.respondentCount).toBe((pick(before)?.respondentCount ?? 0) + 1)
      const optionCount = (a: Analytics, value: string) => pick(a)?.options.find((o) => o.value === value)?.count ?? 0
      expect(optionCount(after, "b")).toBe(optionCount(before, "b") + 1)
      expect(optionCount(after, "a")).toBe(optionCount(before, "a"))
    }).pipe(Effect.scoped))
})
