import { SqlClient } from "@effect/sql"
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Aggregator } from "../src/Analytics/Aggregator.js"
import { Analytics } from "../src/Domain/Analytics.js"
import { EventEnvelope } from "../src/Domain/Event.js"
import { ResponsePage } from "../src/Responses/Api.js"
import { ResponseId, SurveyId } from "../src/Domain/Ids.js"
import { EmbedSessionRequest } from "../src/Embeds/Api.js"
import { clientFor } from "./support/ApiClient.js"
import { TOKENS } from "./support/Fixtures.js"
import { respondentFixture } from "./support/RespondentFixtures.js"
import { everyRow } from "./support/StoredRows.js"
import { bodyOf, call, decodeAs, ErrorCode, get, TestServer } from "./support/TestServer.js"
import { eventually, receiver } from "./support/WebhookReceiver.js"
import { deliveries, WebhookWorld } from "./support/WebhookWorld.js"

const PageBody = Schema.encodedSchema(ResponsePage)
const AnalyticsBody = Schema.encodedSchema(Analytics)
const Saved = Schema.Struct({ responseId: Schema.String })
const PageOpen = Schema.Struct({ respondentToken: Schema.String })
const ErasureBody = Schema.Struct({ externalUserId: Schema.String, deletedResponses: Schema.Number })


const json = (value: unknown) => JSON.stringify(value)

/** An embed session for `externalUserId`, its page opened: the respondent token and the page's path. */
const embedFor = (surveyId: string, externalUserId: string) =>
  Effect.gen(function*() {
    const api = yield* clientFor(TOKENS.editor)
    const created = yield* api.embedSessions.create({
      path: { id: SurveyId.make(surveyId) },
      payload: new EmbedSessionRequest({ externalUserId }),
      headers: {}
    })
    // Raw: the embed page is outside the HttpApi.
    const path = new URL(created.embedUrl).pathname
    return { path, open: Effect.map(call("GET", path, { headers: { accept: "application/json" } }), (res) => res) }
  })

const startResponse = (surveyId: string, externalUserId: string, text: string, finished = true) =>
  Effect.gen(function*() {
    const embed = yield* embedFor(surveyId, externalUserId)
    const opened = yield* embed.open
    expect(opened.status).toBe(200)
    const token = bodyOf(PageOpen, opened).respondentToken
    const answers = surveyId === "srv_short"
      ? [{ questionId: "q_short_text", values: [text] }]
      : [{ questionId: "q_text", values: [text] }, { questionId: "q_pick", values: ["a"] }, { questionId: "q_num", values: ["5"] }]
    const respondent = yield* clientFor(token)
    const saved = yield* respondent.respondent.start({ payload: { answers, finished }, headers: {} })
    return saved.responseId
  })

const Counts = Schema.Struct({
  responses: Schema.Number,
  answers: Schema.Number,
  events: Schema.Number,
  responseCount: Schema.Number
})
const Payload = Schema.Struct({ payload: Schema.String })

const state = (surveyId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [row] = decodeAs(Schema.Array(Counts), yield* sql`
      SELECT (SELECT count(*) FROM responses WHERE survey_id = ${surveyId}) AS responses,
             (SELECT count(*) FROM answers a JOIN responses r ON r.id = a.response_id WHERE r.survey_id = ${surveyId}) AS answers,
             (SELECT count(*) FROM events) AS events,
             (SELECT response_count FROM surveys WHERE id = ${surveyId}) AS response_count`.pipe(Effect.orDie))
    return row!
  })

const storedEvents = (responseId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = decodeAs(Schema.Array(Payload), yield* sql`SELECT payload FROM events ORDER BY seq`.pipe(Effect.orDie))
    return rows.map((r) => decodeAs(Schema.parseJson(EventEnvelope), r.payload))
      .filter((e) => e.data["responseId"] === responseId)
  })

layer(TestServer(respondentFixture))("deleting a response", (it) => {
  it.effect("204; then GET 404, gone from lists, CSV, responseCount and analytics; payloads reduced; one event", () =>
    Effect.gen(function*() {
      const aggregator = yield* Aggregator
      const responseId = yield* startResponse("srv_main", "person-del", "delete-me-text")
      yield* aggregator.catchUp()
      const analyticsBefore = bodyOf(AnalyticsBody, yield* get("/api/v1/surveys/srv_main/analytics", TOKENS.editor))
      const before = yield* state("srv_main")
      expect((yield* storedEvents(responseId)).map((e) => e.type)).toEqual(["response.created", "response.completed"])

      const res = yield* call("DELETE", `/api/v1/surveys/srv_main/responses/${responseId}`, { token: TOKENS.editor })
      expect(res.status).toBe(204)
      expect(res.text).toBe("")

      const api = yield* clientFor(TOKENS.editor)
      const gone = api.responses.get({ path: { id: SurveyId.make("srv_main"), responseId: ResponseId.make(responseId) } })
      expect((yield* Effect.flip(gone))._tag).toBe("NotFound")
      const list = bodyOf(PageBody, yield* get("/api/v1/surveys/srv_main/responses?limit=100", TOKENS.editor))
      expect(list.data.map((r) => r.id)).not.toContain(responseId)
      const changed = bodyOf(PageBody, yield* get("/api/v1/surveys/srv_main/responses?updatedAfter=2000-01-01T00:00:00Z&limit=100", TOKENS.editor))
      expect(changed.data.map((r) => r.id)).not.toContain(responseId)
      const csv = yield* get("/api/v1/surveys/srv_main/responses?format=csv", TOKENS.editor)
      expect(csv.text).not.toContain(responseId)
      expect(csv.text).not.toContain("delete-me-text")

      const after = yield* state("srv_main")
      expect(after.responses).toBe(before.responses - 1)
      expect(after.responseCount).toBe(before.responseCount - 1)
      expect(after.answers).toBe(before.answers - 3)
      expect(after.events).toBe(before.events + 1)
      const survey = yield* get("/api/v1/surveys/srv_main", TOKENS.editor)
      expect(bodyOf(Schema.Struct({ responseCount: Schema.Number }), survey).responseCount).toBe(after.responseCount)

      // The stored counters were decremented in the same transaction: no aggregation step needed.
      const analytics = bodyOf(AnalyticsBody, yield* get("/api/v1/surveys/srv_main/analytics", TOKENS.editor))
      expect(analytics.responseCount).toBe(analyticsBefore.responseCount - 1)
      expect(analytics.completedCount).toBe(analyticsBefore.completedCount - 1)
      const text = (a: typeof analytics) => a.questions.find((q) => q.id === "q_text")?.textAnswerCount
      expect(text(analytics)).toBe((text(analyticsBefore) ?? 0) - 1)
      // And a later aggregation step agrees with them.
      yield* aggregator.catchUp()
      expect(bodyOf(AnalyticsBody, yield* get("/api/v1/surveys/srv_main/analytics", TOKENS.editor))).toEqual(analytics)

      const events = yield* storedEvents(responseId)
      expect(events.map((e) => [e.type, e.data])).toEqual([
        ["response.created", { responseId, externalUserId: null, response: null }],
        ["response.completed", { responseId, externalUserId: null, response: null }],
        ["response.deleted", { responseId, externalUserId: "person-del" }]
      ])

      const again = yield* call("DELETE", `/api/v1/surveys/srv_main/responses/${responseId}`, { token: TOKENS.editor })
      expect(again.status).toBe(404)
      expect(yield* state("srv_main")).toEqual(after)
    }))

  it.effect("refused: viewer 403, a limited key's other survey 403, another workspace's or unknown response 404", () =>
    Effect.gen(function*() {
      const responseId = yield* startResponse("srv_short", "person-keep", "keep-me")
      const before = yield* state("srv_short")
      const cases: ReadonlyArray<readonly [string, string, number, string]> = [
        [`/api/v1/surveys/srv_short/responses/${responseId}`, TOKENS.viewer, 403, "forbidden"],
        [`/api/v1/surveys/srv_short/responses/${responseId}`, TOKENS.limited, 403, "forbidden"],
        [`/api/v1/surveys/srv_short/responses/${responseId}`, TOKENS.other, 404, "not_found"],
        [`/api/v1/surveys/srv_other/responses/${responseId}`, TOKENS.other, 404, "not_found"],
        [`/api/v1/surveys/srv_main/responses/${responseId}`, TOKENS.editor, 404, "not_found"],
        ["/api/v1/surveys/srv_short/responses/rsp_unknown", TOKENS.editor, 404, "not_found"],
        ["/api/v1/surveys/srv_nope/responses/rsp_1", TOKENS.editor, 404, "not_found"],
        [`/api/v1/surveys/srv_short/responses/${responseId}`, "sk_live_not_a_key_at_all", 401, "unauthorized"]
      ]
      for (const [path, token, status, code] of cases) {
        const res = yield* call("DELETE", path, { token })
        expect([path, token, res.status]).toEqual([path, token, status])
        expect(bodyOf(ErrorCode, res).code).toBe(code)
      }
      expect(yield* state("srv_short")).toEqual(before)
      expect((yield* get(`/api/v1/surveys/srv_short/responses/${responseId}`, TOKENS.editor)).status).toBe(200)
    }))
})

layer(TestServer(respondentFixture))("erasing a respondent", (it) => {
  it.effect("deletes every response of the person in the workspace, their embed sessions, and no answer text is left", () =>
    Effect.gen(function*() {
      const aggregator = yield* Aggregator
      const marker = "erase-me-4f1c9a"
      const first = yield* startResponse("srv_main", "person-x", `${marker} one`)
      const second = yield* startResponse("srv_short", "person-x", `${marker} two`, false)
      const kept = yield* startResponse("srv_short", "person-y", "kept text")
      yield* aggregator.catchUp()
      const unused = yield* embedFor("srv_short", "person-x")
      const before = { main: yield* state("srv_main"), short: yield* state("srv_short") }
      const rowsBefore = yield* everyRow
      expect(rowsBefore.rows.some((r) => r.row.includes(marker))).toBe(true)

      const res = yield* call("POST", "/api/v1/erasures", { token: TOKENS.editor, body: json({ externalUserId: "person-x" }) })
      expect(res.status).toBe(200)
      expect(bodyOf(ErasureBody, res)).toEqual({ externalUserId: "person-x", deletedResponses: 2 })

      for (const [surveyId, id] of [["srv_main", first], ["srv_short", second]] as const) {
        expect((yield* get(`/api/v1/surveys/${surveyId}/responses/${id}`, TOKENS.editor)).status).toBe(404)
      }
      expect((yield* get(`/api/v1/surveys/srv_short/responses/${kept}`, TOKENS.editor)).status).toBe(200)
      expect((yield* state("srv_main")).responseCount).toBe(before.main.responseCount - 1)
      expect((yield* state("srv_short")).responseCount).toBe(before.short.responseCount - 1)
      // The unused embed URL is gone with the id it carried.
      expect((yield* unused.open).status).toBe(404)

      // The walk: no table holds the erased answers; the id is left only in the response.deleted events.
      const after = yield* everyRow
      expect(after.tables).toEqual(expect.arrayContaining(["responses", "answers", "events", "analytics_contributions"]))
      expect(after.rows.filter((r) => r.row.includes(marker))).toEqual([])
      const holding = after.rows.filter((r) => r.row.includes("person-x"))
      expect(holding.map((r) => r.table)).toEqual(["events", "events"])
      expect(holding.every((r) => r.row.includes("response.deleted"))).toBe(true)

      const again = yield* call("POST", "/api/v1/erasures", { token: TOKENS.editor, body: json({ externalUserId: "person-x" }) })
      expect(again.status).toBe(200)
      expect(bodyOf(ErasureBody, again)).toEqual({ externalUserId: "person-x", deletedResponses: 0 })
    }))

  it.effect("bad input and wrong keys: documented errors, nothing changed", () =>
    Effect.gen(function*() {
      yield* startResponse("srv_short", "person-z", "still here")
      const before = yield* everyRow
      const cases: ReadonlyArray<readonly [string | undefined, string, number, string]> = [
        [json({ externalUserId: "person-z" }), TOKENS.viewer, 403, "forbidden"],
        [json({ externalUserId: "person-z" }), TOKENS.limited, 403, "forbidden"],
        [json({ externalUserId: "" }), TOKENS.editor, 400, "invalid_request"],
        [json({ externalUserId: "x".repeat(257) }), TOKENS.editor, 400, "invalid_request"],
        [json({ externalUserId: 42 }), TOKENS.editor, 400, "invalid_request"],
        [json({}), TOKENS.editor, 400, "invalid_request"],
        ["{not json", TOKENS.editor, 400, "invalid_request"],
        [undefined, TOKENS.editor, 400, "invalid_request"],
        [json({ externalUserId: "person-z" }), "sk_live_not_a_key_at_all", 401, "unauthorized"]
      ]
      for (const [body, token, status, code] of cases) {
        const res = yield* call("POST", "/api/v1/erasures", body === undefined ? { token } : { token, body })
        expect([body?.slice(0, 20), token, res.status]).toEqual([body?.slice(0, 20), token, status])
        expect(bodyOf(ErrorCode, res).code).toBe(code)
        if (status === 400) expect(res.body).toMatchObject({ issues: [{}] })
      }
      const after = yield* everyRow
      // Only the quota counters move.
      const unchanged = (rows: typeof before.rows) => rows.filter((r) => !r.table.startsWith("usage_"))
      expect(unchanged(after.rows)).toEqual(unchanged(before.rows))
      const other = yield* call("POST", "/api/v1/erasures", { token: TOKENS.other, body: json({ externalUserId: "person-z" }) })
      expect(bodyOf(ErasureBody, other).deletedResponses).toBe(0)
      const longest = yield* call("POST", "/api/v1/erasures", {
        token: TOKENS.editor,
        body: json({ externalUserId: "x".repeat(256) })
      })
      expect(longest.status).toBe(200)
    }))
})

describe("response events", () => {
  it.live("created, updated, completed and deleted reach only the webhooks that name them", () =>
    Effect.gen(function*() {
      const optedIn = yield* receiver()
      const defaults = yield* receiver()
      const put = (path: string, body: unknown) => call("PUT", path, { token: TOKENS.editor, body: json(body) })
      expect((yield* put("/api/v1/webhooks", { targetUrl: defaults.url })).status).toBe(200)
      expect((yield* put("/api/v1/surveys/srv_main/webhook", {
        targetUrl: optedIn.url,
        events: ["response.created", "response.updated", "response.completed", "response.deleted"]
      })).status).toBe(200)

      const embed = yield* embedFor("srv_main", "person-ev")
      const token = bodyOf(PageOpen, yield* embed.open).respondentToken
      const save = (finished: boolean, id?: string) =>
        Effect.map(
          call(id === undefined ? "POST" : "PATCH", `/respond/v1/responses${id === undefined ? "" : `/${id}`}`, {
            token,
            body: json({ answers: [{ questionId: "q_pick", values: [finished ? "b" : "a"] }], finished })
          }),
          (res) => bodyOf(Saved, res).responseId
        )
      const id = yield* save(false)
      yield* save(false, id)
      yield* save(true, id)
      // A response created finished: created and completed.
      const pageToken = bodyOf(PageOpen, yield* call("GET", "/s/srv_main", { headers: { accept: "application/json" } }))
        .respondentToken
      const direct = yield* call("POST", "/respond/v1/responses", {
        token: pageToken,
        body: json({ answers: [{ questionId: "q_pick", values: ["c"] }], finished: true })
      })
      const directId = bodyOf(Saved, direct).responseId
      const envelopes = (received: ReadonlyArray<{ readonly body: string }>) =>
        received.map((r) => decodeAs(EventEnvelope, JSON.parse(r.body)))
      // Fan-out applies the filters: once every delivery it made has arrived, nothing else is coming.
      const settled = (count: number) =>
        eventually(deliveries, (all) => all.length >= count && all.every((d) => d.state === "delivered"))
      yield* settled(7)
      const saved = envelopes(yield* optedIn.received)
      const ofType = (list: typeof saved, type: string, responseId: string) =>
        list.find((e) => e.type === type && e.data["responseId"] === responseId)
      expect(ofType(saved, "response.updated", id)?.data).toMatchObject({
        responseId: id,
        externalUserId: "person-ev",
        response: { id, completed: false, answers: [{ fieldId: "q_pick", values: ["a"] }] }
      })
      expect(ofType(saved, "response.completed", id)?.data).toMatchObject({ responseId: id, response: { id, completed: true } })

      expect((yield* call("DELETE", `/api/v1/surveys/srv_main/responses/${id}`, { token: TOKENS.editor })).status).toBe(204)
      yield* settled(8)
      const got = envelopes(yield* optedIn.received)
      // Attempts to one webhook run side by side, so arrival order is not event order.
      expect(got.map((e) => `${e.type} ${String(e.data["responseId"])}`).sort()).toEqual([
        `response.created ${id}`,
        `response.updated ${id}`,
        `response.completed ${id}`,
        `response.created ${directId}`,
        `response.completed ${directId}`,
        `response.deleted ${id}`
      ].sort())
      expect(ofType(got, "response.deleted", id)?.data).toEqual({ responseId: id, externalUserId: "person-ev" })
      const fromDefaults = yield* defaults.received
      expect(envelopes(fromDefaults).map((e) => e.type)).toEqual(["response.completed", "response.completed"])
    }).pipe(Effect.provide(WebhookWorld({}, undefined, {})), Effect.scoped))
})
