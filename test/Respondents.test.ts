import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Schema } from "effect"
import { SurveyResponse } from "../src/Domain/Response.js"
import { EventEnvelope } from "../src/Domain/Event.js"
import { SurveyLifecycle } from "../src/Surveys/SurveyLifecycle.js"
import { storedRendering } from "./support/AnswerDocuments.js"
import { EmbedSessionRequest } from "../src/Embeds/Api.js"
import { clientFor } from "./support/ApiClient.js"
import { TOKENS } from "./support/Fixtures.js"
import { allTypesAnswers, respondentFixture } from "./support/RespondentFixtures.js"
import { bodyOf, call, decodeAs, ErrorCode, get, TestServer } from "./support/TestServer.js"
import { Count, StoredCounts } from "./support/StoredRows.js"
import { advance } from "./support/Advance.js"
import { SurveyId } from "../src/Domain/Ids.js"

const TokenHash = Schema.Struct({ tokenHash: Schema.String })
const StoredEvent = Schema.Struct({ id: Schema.String, type: Schema.String, workspaceId: Schema.String, payload: Schema.String })

const PUBLIC_BASE_URL = "https://surveys.example.test"

const json = (value: unknown) => JSON.stringify(value)

const SurveyPageBody = Schema.Struct({
  survey: Schema.Struct({ id: Schema.String }),
  questions: Schema.Array(Schema.Struct({ id: Schema.String, type: Schema.String })),
  respondentToken: Schema.String
})
const SavedBody = Schema.Struct({ responseId: Schema.String })
/** A response as the API encodes it. */
const ResponseBody = Schema.encodedSchema(SurveyResponse)
const Issues = Schema.Struct({ issues: Schema.Array(Schema.Struct({ path: Schema.String })) })
const InvalidRequest = Schema.Struct({ code: Schema.String, message: Schema.String, ...Issues.fields })

const createEmbed = (surveyId: string, externalUserId: string) =>
  Effect.gen(function*() {
    const api = yield* clientFor(TOKENS.editor)
    const body = yield* api.embedSessions.create({
      path: { id: SurveyId.make(surveyId) },
      payload: new EmbedSessionRequest({ externalUserId }),
      headers: {}
    })
    return { ...body, path: body.embedUrl.slice(PUBLIC_BASE_URL.length) }
  })

const openAsJson = (path: string) =>
  Effect.gen(function*() {
    const res = yield* call("GET", path, { headers: { accept: "application/json" } })
    expect(res.status).toBe(200)
    return bodyOf(SurveyPageBody, res)
  })

const respond = (token: string, body: unknown, responseId?: string) =>
  call(responseId === undefined ? "POST" : "PATCH", `/respond/v1/responses${responseId === undefined ? "" : `/${responseId}`}`, {
    token,
    body: typeof body === "string" ? body : json(body)
  })

const counts = (surveyId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [row] = decodeAs(Schema.Array(StoredCounts), yield* sql`
      SELECT (SELECT count(*) FROM responses WHERE survey_id = ${surveyId}) AS responses,
             (SELECT count(*) FROM answers a JOIN responses r ON r.id = a.response_id WHERE r.survey_id = ${surveyId}) AS answers,
             (SELECT count(*) FROM response_changes WHERE survey_id = ${surveyId}) AS changes,
             (SELECT count(*) FROM events WHERE survey_id = ${surveyId}) AS events,
             (SELECT response_count FROM surveys WHERE id = ${surveyId}) AS response_count`.pipe(Effect.orDie))
    return row!
  })

layer(TestServer(respondentFixture, { publicBaseUrl: PUBLIC_BASE_URL }))("respondents", (it) => {
  it.effect("creates an embed session for an editor key: one-hour, one-load URL under PUBLIC_BASE_URL", () =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const session = yield* createEmbed("srv_all", "user-42")
      expect(session.embedUrl).toMatch(new RegExp(`^${PUBLIC_BASE_URL}/embed/[A-Za-z0-9_-]{43}$`))
      expect(Date.parse(session.expiresAt)).toBe(now + 3_600_000)
      expect(session.expiresAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
      const sql = yield* SqlClient.SqlClient
      const stored = decodeAs(Schema.Array(TokenHash), yield* sql`SELECT token_hash FROM embed_sessions`.pipe(Effect.orDie))
      const token = session.path.split("/").pop()!
      expect(stored.some((r) => r.tokenHash === token)).toBe(false)
    }))

  it.effect("refuses embed sessions per the contract", () =>
    Effect.gen(function*() {
      const post = (surveyId: string, body: string | undefined, token: string = TOKENS.editor) =>
        call("POST", `/api/v1/surveys/${surveyId}/embed-sessions`, body === undefined ? { token } : { token, body })
      const cases: Array<[string, string | undefined, string, number, string]> = [
        ["srv_all", json({ externalUserId: "u" }), TOKENS.viewer, 403, "forbidden"],
        ["srv_draft", json({ externalUserId: "u" }), TOKENS.editor, 400, "invalid_request"],
        ["srv_closed", json({ externalUserId: "u" }), TOKENS.editor, 400, "invalid_request"],
        ["srv_trashed", json({ externalUserId: "u" }), TOKENS.editor, 404, "not_found"],
        ["srv_other", json({ externalUserId: "u" }), TOKENS.editor, 404, "not_found"],
        ["srv_nope", json({ externalUserId: "u" }), TOKENS.editor, 404, "not_found"],
        ["srv_all", json({ externalUserId: "u" }), TOKENS.limited, 403, "forbidden"],
        ["srv_all", undefined, TOKENS.editor, 400, "invalid_request"],
        ["srv_all", "{not json", TOKENS.editor, 400, "invalid_request"],
        ["srv_all", json({}), TOKENS.editor, 400, "invalid_request"],
        ["srv_all", json({ externalUserId: "" }), TOKENS.editor, 400, "invalid_request"],
        ["srv_all", json({ externalUserId: "x".repeat(257) }), TOKENS.editor, 400, "invalid_request"],
        ["srv_all", json({ externalUserId: 42 }), TOKENS.editor, 400, "invalid_request"],
        ["srv_all", json({ externalUserId: "u" }), "sk_live_nope_nope_nope", 401, "unauthorized"]
      ]
      const sql = yield* SqlClient.SqlClient
      const [before] = decodeAs(Schema.Array(Count), yield* sql`SELECT count(*) AS n FROM embed_sessions`.pipe(Effect.orDie))
      for (const [surveyId, body, token, status, code] of cases) {
        const res = yield* post(surveyId, body, token)
        expect([surveyId, body?.slice(0, 30), res.status]).toEqual([surveyId, body?.slice(0, 30), status])
        expect(bodyOf(ErrorCode, res).code).toBe(code)
      }
      const [after] = decodeAs(Schema.Array(Count), yield* sql`SELECT count(*) AS n FROM embed_sessions`.pipe(Effect.orDie))
      expect(after!.n).toBe(before!.n)
      const longest = yield* post("srv_all", json({ externalUserId: "x".repeat(256) }))
      expect(longest.status).toBe(201)
    }))

  it.effect("an embed URL loads once: JSON form with sections, then 410; forged tokens 404", () =>
    Effect.gen(function*() {
      const session = yield* createEmbed("srv_all", "user-once")
      const page = yield* openAsJson(session.path)
      expect(page.survey.id).toBe("srv_all")
      expect(page.questions.map((q) => q.type)).toContain("section")
      expect(page.questions.filter((q) => q.type !== "section")).toHaveLength(10)
      expect(page.respondentToken).toMatch(/^[A-Za-z0-9_-]{43}$/)
      const again = yield* call("GET", session.path, { headers: { accept: "application/json" } })
      expect(again.status).toBe(410)
      expect(bodyOf(ErrorCode, again).code).toBe("gone")
      const againHtml = yield* call("GET", session.path, { headers: { accept: "text/html" } })
      expect(againHtml.status).toBe(410)
      expect(againHtml.headers["content-type"]).toMatch(/text\/html/)
      expect(againHtml.text).toContain("already used")
      const forged = yield* call("GET", `/embed/${"A".repeat(43)}`, { headers: { accept: "text/html" } })
      expect(forged.status).toBe(404)
      expect(forged.text).toContain("not valid")
      const junk = yield* call("GET", "/embed/%3Cscript%3E", { headers: { accept: "application/json" } })
      expect(junk.status).toBe(404)
    }))

  it.effect("an expired embed URL answers 410 and starts nothing", () =>
    Effect.gen(function*() {
      const session = yield* createEmbed("srv_all", "user-late")
      const fresh = yield* createEmbed("srv_all", "user-in-time")
      yield* advance("59 minutes")
      yield* openAsJson(fresh.path)
      yield* advance("1 minute")
      const before = yield* counts("srv_all")
      const res = yield* call("GET", session.path, { headers: { accept: "text/html" } })
      expect(res.status).toBe(410)
      expect(res.text).toContain("expired")
      expect(yield* counts("srv_all")).toEqual(before)
    }))

  it.effect("serves the survey page as HTML, framable by any site, with every question type", () =>
    Effect.gen(function*() {
      const res = yield* call("GET", "/s/srv_all", { headers: { accept: "text/html,application/xhtml+xml" } })
      expect(res.status).toBe(200)
      expect(res.headers["content-type"]).toMatch(/text\/html/)
      expect(res.headers["content-security-policy"]).toContain("frame-ancestors *")
      expect(res.headers["x-frame-options"]).toBeUndefined()
      for (const type of ["textarea", "email", "checkbox", "number", "calendar", "country", "heatmap", "scale", "sort"]) {
        expect(res.text).toContain(`data-type="${type}"`)
      }
      expect(res.text).toContain("<option value=\"NL\">Netherlands</option>")
      expect(res.text).toContain("/assets/demo-dashboard.svg")
      const asset = yield* get("/assets/demo-dashboard.svg")
      expect(asset.status).toBe(200)
      expect(asset.headers["content-type"]).toMatch(/image\/svg\+xml/)
      expect(asset.text).toContain("<svg")
      expect((yield* get("/assets/missing.svg")).status).toBe(404)
    }))

  it.effect("survey pages answer 404 for unknown, draft and trashed surveys and 410 for closed ones", () =>
    Effect.gen(function*() {
      for (const [id, status] of [["srv_nope", 404], ["srv_draft", 404], ["srv_trashed", 404], ["srv_closed", 410]] as const) {
        const html = yield* call("GET", `/s/${id}`, { headers: { accept: "text/html" } })
        expect([id, html.status]).toEqual([id, status])
        expect(html.headers["content-type"]).toMatch(/text\/html/)
        const asJson = yield* call("GET", `/s/${id}`, { headers: { accept: "application/json" } })
        expect([id, asJson.status]).toEqual([id, status])
        expect(typeof bodyOf(Schema.Struct({ message: Schema.Unknown }), asJson).message).toBe("string")
      }
    }))

  it.effect("a partial save, then finishing: stored values, counters, change log and one complete event", () =>
    Effect.gen(function*() {
      const before = yield* counts("srv_all")
      const session = yield* createEmbed("srv_all", "user-full")
      const { respondentToken } = yield* openAsJson(session.path)

      const first = yield* respond(respondentToken, { answers: allTypesAnswers.slice(0, 3), finished: false })
      expect(first.status).toBe(201)
      const responseId = bodyOf(SavedBody, first).responseId
      expect(responseId).toMatch(/^rsp_[A-Za-z0-9]{20}$/)
      const partial = yield* get(`/api/v1/surveys/srv_all/responses/${responseId}`, TOKENS.editor)
      expect(partial.body).toMatchObject({ externalUserId: "user-full", completed: false, completedAt: null })
      const mid = yield* counts("srv_all")
      expect(mid.responses).toBe(before.responses + 1)
      expect(mid.responseCount).toBe(before.responseCount + 1)
      expect(mid.changes).toBe(before.changes + 1)
      // response.created
      expect(mid.events).toBe(before.events + 1)

      const done = yield* respond(respondentToken, { answers: allTypesAnswers.slice(3), finished: true }, responseId)
      expect(done.status).toBe(200)
      expect(done.body).toEqual({ responseId, completed: true })

      const read = yield* get(`/api/v1/surveys/srv_all/responses/${responseId}`, TOKENS.editor)
      const response = bodyOf(ResponseBody, read)
      expect(response.completed).toBe(true)
      expect(response.completedAt).not.toBeNull()
      expect(response.answers.map((a) => [a.fieldId, a.value, a.values])).toEqual([
        ["q_all_email", "person@example.com", ["person@example.com"]],
        ["q_all_country", "NL", ["NL"]],
        ["q_all_since", "2024-02-29", ["2024-02-29"]],
        ["q_all_role", "pm", ["pm"]],
        ["q_all_colours", json(["red", "blue"]), ["red", "blue"]],
        ["q_all_scale", "4", ["4"]],
        ["q_all_seats", "7.5", ["7.5"]],
        ["q_all_rank", json(["docs", "speed"]), ["docs", "speed"]],
        ["q_all_heat", "0.25,0.5", ["0.25,0.5"]],
        ["q_all_comment", "=hello, \"world\"\nsecond line", ["=hello, \"world\"\nsecond line"]]
      ])

      // The writer stored the response's rendering in the same transaction, current and equal to
      // the answers assembled from their rows.
      const stored = yield* storedRendering(responseId)
      expect(stored.current).toBe(1)
      const wireAnswers = bodyOf(Schema.Struct({ answers: Schema.Array(Schema.Unknown) }), read).answers
      expect(stored.answersJson).toBe(JSON.stringify(wireAnswers))

      const after = yield* counts("srv_all")
      expect(after.responses).toBe(before.responses + 1)
      expect(after.responseCount).toBe(before.responseCount + 1)
      expect(after.changes).toBe(before.changes + 2)
      // Completing emits response.completed only.
      expect(after.events).toBe(before.events + 2)
      const survey = yield* get("/api/v1/surveys/srv_all", TOKENS.editor)
      expect(bodyOf(Schema.Struct({ responseCount: Schema.Number }), survey).responseCount).toBe(after.responseCount)

      const sql = yield* SqlClient.SqlClient
      const [event] = decodeAs(
        Schema.Array(StoredEvent),
        yield* sql`SELECT id, type, workspace_id, payload FROM events WHERE survey_id = 'srv_all' ORDER BY seq DESC LIMIT 1`
          .pipe(Effect.orDie)
      )
      expect(event!.type).toBe("response.completed")
      expect(event!.workspaceId).toBe("ws_a")
      const envelope = Schema.decodeUnknownSync(Schema.parseJson(EventEnvelope))(event!.payload)
      expect(envelope.id).toBe(event!.id)
      expect(envelope.id).toMatch(/^evt_/)
      expect(envelope.formId).toBe("srv_all")
      expect(envelope.data).toEqual({ responseId, externalUserId: "user-full", response: read.body })

      const twice = yield* respond(respondentToken, { answers: [], finished: true }, responseId)
      expect(twice.status).toBe(400)
      expect((yield* counts("srv_all")).events).toBe(after.events)

      const second = yield* respond(respondentToken, { answers: [], finished: false })
      expect(second.status).toBe(400)
      expect(bodyOf(ErrorCode, second).code).toBe("invalid_request")
    }))

  it.effect("an embed token starts exactly one response, even when two saves race", () =>
    Effect.gen(function*() {
      const session = yield* createEmbed("srv_short", "user-race")
      const { respondentToken } = yield* openAsJson(session.path)
      const body = { answers: [{ questionId: "q_short_text", values: ["hi"] }] }
      const results = yield* Effect.all([respond(respondentToken, body), respond(respondentToken, body)], {
        concurrency: "unbounded"
      })
      expect(results.map((r) => r.status).sort()).toEqual([201, 400])
      const sql = yield* SqlClient.SqlClient
      const rows = decodeAs(
        Schema.Array(Count),
        yield* sql`SELECT count(*) AS n FROM responses WHERE external_user_id = 'user-race'`.pipe(Effect.orDie)
      )
      expect(rows.map((row) => row.n)).toEqual([1])
    }))

  it.effect("finishing counts the answers saved before and the ones the same save removes", () =>
    Effect.gen(function*() {
      const { respondentToken } = yield* openAsJson("/s/srv_all")
      const started = yield* respond(respondentToken, { answers: allTypesAnswers.slice(0, 3) })
      const id = bodyOf(SavedBody, started).responseId
      const before = yield* counts("srv_all")
      const byId = (answers: ReadonlyArray<string>) => allTypesAnswers.filter((a) => answers.includes(a.questionId))
      const rest = byId(["q_all_role", "q_all_scale"])
      const removing = yield* respond(respondentToken, {
        answers: [...rest, { questionId: "q_all_email", values: [] }],
        finished: true
      }, id)
      expect(removing.status).toBe(400)
      expect(bodyOf(Issues, removing).issues.map((i) => i.path)).toEqual(["questions.q_all_email"])
      expect(yield* counts("srv_all")).toEqual(before)
      const kept = bodyOf(ResponseBody, yield* get(`/api/v1/surveys/srv_all/responses/${id}`, TOKENS.editor))
      expect([kept.completed, kept.answers.map((a) => a.fieldId)]).toEqual([false, ["q_all_email", "q_all_country", "q_all_since"]])

      const finished = yield* respond(respondentToken, { answers: rest, finished: true }, id)
      expect(finished.status).toBe(200)
      expect(finished.body).toEqual({ responseId: id, completed: true })
    }))

  it.effect("rejects bad answers with issues and stores nothing", () =>
    Effect.gen(function*() {
      const { respondentToken } = yield* openAsJson("/s/srv_all")
      const answer = (questionId: string, values: Array<string>) => ({ answers: [{ questionId, values }] })
      const bad: Array<[unknown, string]> = [
        [answer("q_all_email", ["not-an-email"]), "answers.0.values"],
        [answer("q_all_country", ["XX"]), "answers.0.values"],
        [answer("q_all_country", ["DE", "FR"]), "answers.0.values"],
        [answer("q_all_since", ["2023-02-29"]), "answers.0.values"],
        [answer("q_all_role", ["dev", "pm"]), "answers.0.values"],
        [answer("q_all_colours", ["red", "red"]), "answers.0.values"],
        [answer("q_all_colours", ["purple"]), "answers.0.values"],
        [answer("q_all_scale", ["6"]), "answers.0.values"],
        [answer("q_all_seats", ["1e3"]), "answers.0.values"],
        [answer("q_all_rank", ["docs", "docs"]), "answers.0.values"],
        [answer("q_all_heat", ["1.5,0.2"]), "answers.0.values"],
        [answer("q_all_heat", ["0.12345,0.2"]), "answers.0.values"],
        [answer("q_all_comment", ["   "]), "answers.0.values"],
        [answer("q_all_s1", ["x"]), "answers.0.values"],
        [answer("q_text", ["from another survey"]), "answers.0.questionId"],
        [answer("q_nope", ["x"]), "answers.0.questionId"],
        [{ answers: [{ questionId: "q_all_seats", values: [42] }] }, "answers.0.values.0"],
        [{ answers: [{ questionId: "q_all_seats" }] }, "answers.0.values"],
        [{ answers: [], finished: "yes" }, "finished"],
        [{ answers: [], extra: 1 }, "extra"],
        [{ answers: allTypesAnswers.slice(0, 1), finished: true }, "questions.q_all_country"],
        ["[1,2", ""],
        ["null", ""]
      ]
      const before = yield* counts("srv_all")
      for (const [body, path] of bad) {
        const res = yield* respond(respondentToken, body)
        const error = bodyOf(InvalidRequest, res)
        expect([json(body).slice(0, 60), res.status, error.code]).toEqual([json(body).slice(0, 60), 400, "invalid_request"])
        expect(error.issues.map((i) => i.path)).toContain(path)
      }
      const mixed = yield* respond(respondentToken, {
        answers: [{ questionId: "q_all_comment", values: ["fine"] }, { questionId: "q_all_scale", values: ["9"] }]
      })
      expect(mixed.status).toBe(400)
      expect(yield* counts("srv_all")).toEqual(before)
    }))

  it.effect("caps the body size and requires a respondent token", () =>
    Effect.gen(function*() {
      const { respondentToken } = yield* openAsJson("/s/srv_all")
      const before = yield* counts("srv_all")
      const huge = json({ answers: [{ questionId: "q_all_comment", values: ["x".repeat(300_000)] }] })
      const tooBig = yield* respond(respondentToken, huge)
      expect(tooBig.status).toBe(400)
      expect(bodyOf(Schema.Struct({ message: Schema.String }), tooBig).message).toMatch(/exceeds/)
      for (const token of ["", "nope", "A".repeat(43), TOKENS.editor]) {
        const res = yield* call("POST", "/respond/v1/responses", { token, body: json({ answers: [] }) })
        expect(res.status).toBe(401)
        expect(bodyOf(ErrorCode, res).code).toBe("unauthorized")
      }
      expect(yield* counts("srv_all")).toEqual(before)
    }))

  it.effect("a public link starts many responses; only their own token may change them", () =>
    Effect.gen(function*() {
      const a = (yield* openAsJson("/s/srv_short")).respondentToken
      const b = (yield* openAsJson("/s/srv_short")).respondentToken
      const one = yield* respond(a, { answers: [{ questionId: "q_short_text", values: ["one"] }] })
      const two = yield* respond(a, { answers: [{ questionId: "q_short_text", values: ["two"] }], finished: true })
      expect([one.status, two.status]).toEqual([201, 201])
      const id = bodyOf(SavedBody, one).responseId
      const foreign = yield* respond(b, { answers: [], finished: true }, id)
      expect(foreign.status).toBe(404)
      const read = yield* get(`/api/v1/surveys/srv_short/responses/${bodyOf(SavedBody, two).responseId}`, TOKENS.editor)
      expect(read.body).toMatchObject({ externalUserId: null, completed: true })
      const cleared = yield* respond(a, { answers: [{ questionId: "q_short_text", values: [] }] }, id)
      expect(cleared.status).toBe(200)
      const empty = yield* get(`/api/v1/surveys/srv_short/responses/${id}`, TOKENS.editor)
      expect(bodyOf(ResponseBody, empty).answers).toEqual([])
    }))

  it.effect("a survey closed while someone answers refuses further saves and changes nothing", () =>
    Effect.gen(function*() {
      const { respondentToken } = yield* openAsJson("/s/srv_short")
      const started = yield* respond(respondentToken, { answers: [{ questionId: "q_short_text", values: ["hi"] }] })
      const id = bodyOf(SavedBody, started).responseId
      const lifecycle = yield* SurveyLifecycle
      yield* lifecycle.apply(SurveyId.make("srv_short"), "close").pipe(Effect.orDie)
      const before = yield* counts("srv_short")
      const finish = yield* respond(respondentToken, { answers: [], finished: true }, id)
      expect(finish.status).toBe(400)
      expect(bodyOf(Issues, finish).issues[0]?.path).toBe("surveyId")
      const fresh = yield* respond(respondentToken, { answers: [{ questionId: "q_short_text", values: ["again"] }] })
      expect(fresh.status).toBe(400)
      expect(yield* counts("srv_short")).toEqual(before)
      yield* lifecycle.apply(SurveyId.make("srv_short"), "publish").pipe(Effect.orDie)
    }))
})
