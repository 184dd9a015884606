import { HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Option, Schema } from "effect"
import { Api } from "../src/Api.js"
import { ResponseId, SurveyId } from "../src/Domain/Ids.js"
import { answerDocument } from "../src/Responses/AnswerDocumentRepo.js"
import { ResponseRepo } from "../src/Responses/ResponseRepo.js"
import { TOKENS } from "./support/Fixtures.js"
import { allTypesAnswers, respondentFixture } from "./support/RespondentFixtures.js"
import { bodyOf, call, decodeAs, ErrorCode, get, TestServer } from "./support/TestServer.js"
import { Count } from "./support/StoredRows.js"
import { storedRendering } from "./support/AnswerDocuments.js"

const PageBody = Schema.Struct({ respondentToken: Schema.String })
const InvalidBody = Schema.Struct({
  code: Schema.String,
  message: Schema.String,
  issues: Schema.Array(Schema.Struct({ path: Schema.String, message: Schema.String }))
})
const Document = Schema.Struct({
  paths: Schema.Record({ key: Schema.String, value: Schema.Record({ key: Schema.String, value: Schema.Unknown }) })
})

const pageToken = Effect.map(
  call("GET", "/s/srv_all", { headers: { accept: "application/json" } }),
  (res) => bodyOf(PageBody, res).respondentToken
)

const client = (token: string) =>
  HttpApiClient.make(Api, { transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(token)) })

const responses = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.map(sql`SELECT count(*) AS n FROM responses WHERE survey_id = 'srv_all'`.pipe(Effect.orDie), (rows) =>
    decodeAs(Schema.Array(Count), rows)[0]?.n ?? -1))

layer(TestServer(respondentFixture))("the respondent API, declared in the HttpApi", (it) => {
  it.effect("a typed client starts a response and finishes it", () =>
    Effect.gen(function*() {
      const respondent = yield* client(yield* pageToken)
      const started = yield* respondent.respondent.start({
        payload: { answers: allTypesAnswers.slice(0, 2), finished: false },
        headers: {}
      })
      expect(started.responseId).toMatch(/^rsp_/)
      const saved = yield* respondent.respondent.save({
        path: { responseId: started.responseId },
        payload: { answers: allTypesAnswers.slice(2), finished: true }
      })
      expect(saved).toEqual({ responseId: started.responseId, completed: true })
      const stored = yield* get(`/api/v1/surveys/srv_all/responses/${started.responseId}`, TOKENS.editor)
      expect(bodyOf(Schema.Struct({ completed: Schema.Boolean }), stored).completed).toBe(true)
      // Another token may not change it; the typed client sees the documented error class.
      const stranger = yield* client(yield* pageToken)
      const refused = yield* Effect.flip(stranger.respondent.save({
        path: { responseId: started.responseId },
        payload: { answers: [], finished: false }
      }))
      expect(refused._tag).toBe("NotFound")
      const anonymous = yield* client("A".repeat(43))
      const unauthorized = yield* Effect.flip(anonymous.respondent.start({ payload: { answers: [], finished: false }, headers: {} }))
      expect(unauthorized._tag).toBe("Unauthorized")
    }))

  it.effect("a response started and completed at once: its events, its stored rendering and the API agree on it", () =>
    Effect.gen(function*() {
      const token = yield* pageToken
      // Every question type, in an order other than the questions'.
      const answers = [...allTypesAnswers].reverse()
      const res = yield* call("POST", "/respond/v1/responses", { token, body: JSON.stringify({ answers, finished: true }) })
      expect(res.status).toBe(201)
      const { responseId } = bodyOf(Schema.Struct({ responseId: Schema.String }), res)
      const listed = yield* get(`/api/v1/surveys/srv_all/responses/${responseId}`, TOKENS.editor)
      expect(listed.status).toBe(200)
      const stored: unknown = JSON.parse(listed.text)
      const sql = yield* SqlClient.SqlClient
      const events = decodeAs(
        Schema.Array(Schema.Struct({ type: Schema.String, payload: Schema.String })),
        yield* sql`SELECT type, payload FROM events WHERE response_id = ${responseId} ORDER BY seq`.pipe(Effect.orDie)
      )
      expect(events.map((event) => event.type)).toEqual(["response.created", "response.completed"])
      for (const event of events) {
        const envelope = decodeAs(Schema.parseJson(Schema.Struct({ data: Schema.Struct({ response: Schema.Unknown }) })), event.payload)
        expect(envelope.data.response).toEqual(stored)
      }
      // The answers as assembled from the stored answer rows and the questions, in the database.
      const found = yield* (yield* ResponseRepo).findWithAnswers(SurveyId.make("srv_all"), ResponseId.make(responseId))
      const assembled = answerDocument(responseId, Option.getOrThrow(found).answers)
      const rendering = yield* storedRendering(responseId)
      expect(rendering.current).toBe(1)
      expect(rendering.answersJson).toBe(assembled)
      expect(JSON.stringify(bodyOf(Schema.Struct({ answers: Schema.Array(Schema.Unknown) }), listed).answers)).toBe(assembled)
    }))

  it.effect("unknown fields are refused with their path, and nothing is written", () =>
    Effect.gen(function*() {
      const token = yield* pageToken
      const before = yield* responses
      for (const [body, path] of [
        [{ answers: [], finished: false, draft: true }, "draft"],
        [{ answers: [{ questionId: "q_all_email", values: ["a@example.com"], weight: 2 }] }, "answers.0.weight"]
      ] as const) {
        const res = yield* call("POST", "/respond/v1/responses", { token, body: JSON.stringify(body) })
        expect(res.status).toBe(400)
        const error = bodyOf(InvalidBody, res)
        expect(error.code).toBe("invalid_request")
        expect(error.issues.map((i) => i.path)).toContain(path)
      }
      expect(yield* responses).toBe(before)
    }))

  it.effect("one body-size policy: 256 KiB on the respondent API, 64 KiB on /api/v1", () =>
    Effect.gen(function*() {
      const token = yield* pageToken
      // Valid JSON padded with whitespace, so that only the size differs.
      const padded = (value: unknown, bytes: number) => {
        const text = JSON.stringify(value)
        return text.slice(0, -1) + " ".repeat(bytes - text.length) + "}"
      }
      const within = yield* call("POST", "/respond/v1/responses", {
        token,
        body: padded({ answers: [], finished: false }, 200 * 1024)
      })
      expect(within.status).toBe(201)
      const over = yield* call("POST", "/respond/v1/responses", {
        token,
        body: padded({ answers: [], finished: false }, 256 * 1024 + 1)
      })
      expect(over.status).toBe(400)
      expect(bodyOf(InvalidBody, over).message).toContain(`${256 * 1024} bytes`)
      const api = yield* call("POST", "/api/v1/surveys/srv_all/embed-sessions", {
        token: TOKENS.editor,
        body: padded({ externalUserId: "padded" }, 64 * 1024 + 1)
      })
      expect(api.status).toBe(400)
      expect(bodyOf(InvalidBody, api).message).toContain(`${64 * 1024} bytes`)
    }))

  it.effect("a missing or unknown respondent token answers the documented 401", () =>
    Effect.gen(function*() {
      for (const token of [undefined, "not-a-token", "A".repeat(43), TOKENS.editor]) {
        const res = yield* call("POST", "/respond/v1/responses", {
          ...(token === undefined ? {} : { token }),
          body: JSON.stringify({ answers: [] })
        })
        expect(res.status).toBe(401)
        expect(bodyOf(ErrorCode, res).code).toBe("unauthorized")
      }
    }))

  it.effect("appears in /openapi.json beside /api/v1, with its own security scheme", () =>
    Effect.gen(function*() {
      const document = bodyOf(Document, yield* get("/openapi.json"))
      expect(Object.keys(document.paths["/respond/v1/responses"] ?? {})).toEqual(["post"])
      expect(Object.keys(document.paths["/respond/v1/responses/{responseId}"] ?? {})).toEqual(["patch"])
      expect(JSON.stringify(document.paths["/respond/v1/responses"])).toContain("respondentToken")
    }))
})
