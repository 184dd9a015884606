import { SqlClient } from "@effect/sql"
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Either, Schema } from "effect"
import { Webhook } from "standardwebhooks"
import { QuestionListInput, SurveyCreate } from "../src/Authoring/Api.js"
import { Survey } from "../src/Domain/Survey.js"
import { EventEnvelope } from "../src/Domain/Event.js"
import { ResponseId, SurveyId } from "../src/Domain/Ids.js"
import { settleAnalytics } from "./support/AnalyticsWrites.js"
import { clientFor } from "./support/ApiClient.js"
import { TOKENS } from "./support/Fixtures.js"
import { respondentFixture } from "./support/RespondentFixtures.js"
import { bodyOf, call, decodeAs, ErrorBody, get, TestServer } from "./support/TestServer.js"
import { receiver } from "./support/WebhookReceiver.js"
import { register, WebhookWorld } from "./support/WebhookWorld.js"

const Stored = Schema.Array(Schema.Struct({ id: Schema.String, type: Schema.String, deleted: Schema.Number }))

type Body = Record<string, unknown>

const send = (
  method: "POST" | "PUT" | "PATCH" | "DELETE" | "GET",
  path: string,
  body?: Body,
  headers: Record<string, string> = {},
  token: string = TOKENS.editor
) =>
  call(method, `/api/v1${path}`, {
    token,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })

const editor = clientFor(TOKENS.editor)

const survey = (id: string) => ({ path: { id: SurveyId.make(id) } })

/** A survey created through the typed client, answered 201. */
const create = (payload: typeof SurveyCreate.Type, token: string = TOKENS.editor) =>
  Effect.flatMap(clientFor(token), (api) =>
    Effect.map(api.authoring.create({ payload, headers: {}, withResponse: true }), ([created, response]) => {
      expect(response.status).toBe(201)
      return created
    }))

const putQuestions = (id: string, questions: ReadonlyArray<Body>, headers: Record<string, string> = {}) =>
  send("PUT", `/surveys/${id}/questions`, { questions }, headers)

const questionsOf = (id: string) =>
  Effect.map(Effect.flatMap(editor, (api) => api.questions.list(survey(id))), (list) => list.data)

const surveyOf = (id: string) => Effect.flatMap(editor, (api) => api.surveys.get(survey(id)))

/** The one issue path of a 400, checked to be an `invalid_request` with the error body. */
const issuePaths = (res: { readonly status: number; readonly body: unknown; readonly text: string }) => {
  expect(res.status, res.text).toBe(400)
  const body = bodyOf(ErrorBody, res)
  expect(body.code).toBe("invalid_request")
  return (body.issues ?? []).map((i) => i.path)
}

const surveyCount = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.map(sql`SELECT COUNT(*) AS n FROM surveys`.pipe(Effect.orDie), (rows) =>
    decodeAs(Schema.Array(Schema.Struct({ n: Schema.Number })), rows)[0]?.n ?? -1))

const storedQuestions = (surveyId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql`SELECT id, type, deleted FROM questions WHERE survey_id = ${surveyId} ORDER BY id`.pipe(Effect.orDie),
      (rows) => decodeAs(Stored, rows)
    ))

const checkbox = (id: string) => ({
  id,
  type: "checkbox" as const,
  label: "Pick",
  options: [{ value: "a" }, { value: "b", label: "Bee" }]
})

layer(TestServer(respondentFixture))("authoring surveys", (it) => {
  it.effect("creates a draft without questions, readable at once with an ETag", () =>
    Effect.gen(function*() {
      const created = yield* create({ title: "Fresh" })
      expect(created).toMatchObject({
        title: "Fresh",
        description: null,
        status: "draft",
        published: false,
        questionCount: 0,
        responseCount: 0
      })
      expect(created.id).toMatch(/^srv_[0-9A-Za-z]{20}$/)
      expect(created.updatedAt).toBe(created.createdAt)
      const read = yield* get(`/api/v1/surveys/${created.id}`, TOKENS.editor)
      expect(read.body).toEqual(created)
      expect(read.headers["etag"]).toMatch(/^"[0-9a-z]+"$/)
      const questions = yield* get(`/api/v1/surveys/${created.id}/questions`, TOKENS.editor)
      expect(questions.body).toEqual({ data: [] })
      expect(questions.headers["etag"]).toBe(read.headers["etag"])
      const list = yield* editor.pipe(Effect.flatMap((api) => api.surveys.list({ urlParams: {} })))
      expect(list.data.map((s) => s.id)).toContain(created.id)
    }))

  it.effect("/openapi.json documents the ETag of every answer that carries one, and no other", () =>
    Effect.gen(function*() {
      const Operation = Schema.Struct({
        responses: Schema.optional(Schema.Record({
          key: Schema.String,
          value: Schema.Struct({ headers: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })) })
        }))
      })
      const spec = bodyOf(
        Schema.Struct({
          paths: Schema.Record({ key: Schema.String, value: Schema.Record({ key: Schema.String, value: Operation }) })
        }),
        yield* get("/openapi.json")
      )
      const documented = Object.entries(spec.paths).flatMap(([path, operations]) =>
        Object.entries(operations).flatMap(([method, operation]) =>
          Object.entries(operation.responses ?? {}).filter(([, answer]) => answer.headers?.["ETag"] !== undefined)
            .map(([status]) => `${method.toUpperCase()} ${path} ${status}`)
        )
      ).sort()
      expect(documented).toEqual([
        "GET /api/v1/surveys/{id} 200",
        "GET /api/v1/surveys/{id}/definition 200",
        "GET /api/v1/surveys/{id}/questions 200",
        "PATCH /api/v1/surveys/{id} 200",
        "POST /api/v1/surveys 201",
        "POST /api/v1/surveys/{id}/close 200",
        "POST /api/v1/surveys/{id}/publish 200",
        "PUT /api/v1/surveys/{id}/questions 200"
      ])
    }))

  it.effect("a creation answers the new survey's ETag, and its replay the same one", () =>
    Effect.gen(function*() {
      const headers = { "idempotency-key": "etag-of-a-creation" }
      const first = yield* send("POST", "/surveys", { title: "Versioned" }, headers)
      expect(first.status).toBe(201)
      const created = bodyOf(Survey, first)
      const read = yield* get(`/api/v1/surveys/${created.id}`, TOKENS.editor)
      expect(first.headers["etag"]).toMatch(/^"[0-9a-z]+"$/)
      expect(first.headers["etag"]).toBe(read.headers["etag"])
      const replay = yield* send("POST", "/surveys", { title: "Versioned" }, headers)
      expect(replay.headers["idempotent-replayed"]).toBe("true")
      expect(replay.text).toBe(first.text)
      expect(replay.headers["etag"]).toBe(first.headers["etag"])
      const changed = yield* send("PATCH", `/surveys/${created.id}`, { title: "Versioned 2" }, { "if-match": first.headers["etag"] ?? "" })
      expect(changed.status).toBe(200)
    }))

  it.effect("creates a survey with questions, ids given and generated, defaults filled in, sections left out of the list", () =>
    Effect.gen(function*() {
      const created = yield* create({
        title: "With questions",
        description: "About things",
        questions: [
          { type: "section", label: "Part one" },
          { id: "q_text", type: "textarea", label: "Say something", required: true },
          { ...checkbox("q_pick"), allowMultiple: true, settings: { optionType: "text" } },
          { type: "scale", label: "How much", options: [{ value: "1" }, { value: "2" }, { value: "-3" }] },
          { type: "heatmap", label: "Click", settings: { imageUrl: "https://example.com/picture.png" } }
        ]
      })
      expect(created).toMatchObject({ description: "About things", questionCount: 4, status: "draft" })
      const questions = yield* questionsOf(created.id)
      expect(questions.map((q) => q.id.slice(0, 6))).toEqual(["q_text", "q_pick", questions[2]?.id.slice(0, 6), questions[3]?.id.slice(0, 6)])
      expect(questions[2]?.id).toMatch(/^q_[0-9A-Za-z]{20}$/)
      expect(questions[3]?.id).toMatch(/^q_[0-9A-Za-z]{20}$/)
      expect(questions[0]).toEqual({
        id: "q_text",
        type: "textarea",
        label: "Say something",
        required: true,
        allowMultiple: false,
        order: 2,
        options: []
      })
      expect(questions[1]).toMatchObject({
        allowMultiple: true,
        order: 3,
        options: [{ value: "a", label: "a" }, { value: "b", label: "Bee" }]
      })
      // Another survey (srv_main) has a q_text too: ids are unique within a survey only.
      const main = yield* questionsOf("srv_main")
      expect(main.find((q) => q.id === "q_text")?.label).toBe("Say something")
      expect(main.find((q) => q.id === "q_text")?.type).toBe("textarea")
      const other = yield* create({ title: "Other", questions: [{ id: "q_text", type: "email", label: "Mail" }] }, TOKENS.other)
      expect(other.questionCount).toBe(1)
    }))

  it.effect("refuses every invalid body with 400 and the exact issue path, creating nothing", () =>
    Effect.gen(function*() {
      const q = (extra: Body) => ({ questions: [{ type: "textarea", label: "Q", ...extra }] })
      const cases: ReadonlyArray<readonly [Body, string]> = [
        [{ title: "" }, "title"],
        [{ title: "x".repeat(501) }, "title"],
        [{ title: "T", description: "x".repeat(5001) }, "description"],
        [{ titel: "T", title: "T" }, "titel"],
        [{}, "title"],
        [{
          title: "T",
          questions: [
            { type: "textarea", label: "a" },
            { type: "textarea", label: "b" },
            { type: "textarea", label: "c" },
            { type: "rating", label: "d" }
          ]
        }, "questions.3.type"],
        [{ title: "T", ...q({ settings: { foo: 1 } }) }, "questions.0.settings.foo"],
        [{ title: "T", ...q({ requird: true }) }, "questions.0.requird"],
        [{ title: "T", ...q({ id: "has space" }) }, "questions.0.id"],
        [{ title: "T", ...q({ id: "x".repeat(65) }) }, "questions.0.id"],
        [{ title: "T", ...q({ id: "" }) }, "questions.0.id"],
        [{ title: "T", ...q({ label: "" }) }, "questions.0.label"],
        [{ title: "T", ...q({ label: "x".repeat(2001) }) }, "questions.0.label"],
        [{ title: "T", ...q({ required: "yes" }) }, "questions.0.required"],
        [{ title: "T", ...q({ allowMultiple: true }) }, "questions.0.allowMultiple"],
        [{ title: "T", ...q({ options: [{ value: "a" }] }) }, "questions.0.options"],
        [{ title: "T", ...q({ settings: { imageUrl: "https://example.com/a.png" } }) }, "questions.0.settings.imageUrl"],
        [{ title: "T", questions: [{ type: "checkbox", label: "C" }] }, "questions.0.options"],
        [{ title: "T", questions: [{ type: "sort", label: "S", options: [] }] }, "questions.0.options"],
        [{ title: "T", questions: [{ type: "checkbox", label: "C", options: [{ value: "a" }, { value: "a" }] }] }, "questions.0.options.1.value"],
        [{ title: "T", questions: [{ type: "checkbox", label: "C", options: [{ value: "a", colour: "red" }] }] }, "questions.0.options.0.colour"],
        [{ title: "T", questions: [{ type: "scale", label: "S", options: [{ value: "1" }, { value: "1.5" }] }] }, "questions.0.options.1.value"],
        [{ title: "T", questions: [{ type: "heatmap", label: "H", settings: { imageUrl: "http://example.com/a.png" } }] }, "questions.0.settings.imageUrl"],
        [{ title: "T", questions: [{ type: "checkbox", label: "C", options: [{ value: "a" }], settings: { optionType: "video" } }] }, "questions.0.settings.optionType"],
        [{ title: "T", questions: [{ type: "sort", label: "S", options: [{ value: "a" }], settings: { optionType: "image" } }] }, "questions.0.settings.optionType"],
        [{ title: "T", questions: [{ id: "same", type: "email", label: "A" }, { id: "same", type: "email", label: "B" }] }, "questions.1.id"],
        [{ title: "T", questions: Array.from({ length: 201 }, () => ({ type: "textarea", label: "Q" })) }, "questions"]
      ]
      const before = yield* surveyCount
      for (const [body, path] of cases) {
        const res = yield* send("POST", "/surveys", body)
        expect(issuePaths(res), JSON.stringify(body).slice(0, 200)).toContain(path)
        expect(res.text).not.toContain("_tag")
      }
      expect(yield* surveyCount).toBe(before)
      // 200 questions of 2,000 characters is the most, and it is allowed (a body of about 400 KB).
      const most = yield* create({
        title: "Long",
        questions: Array.from({ length: 200 }, (_, i) => ({ type: "textarea", label: `${i}`.padEnd(2000, "x") }))
      })
      expect(most.questionCount).toBe(200)
      // The same rules on PUT, with the same paths.
      const target = yield* create({ title: "Target" })
      const put = yield* putQuestions(target.id, [{ type: "textarea", label: "a" }, { type: "email", label: "b", settings: { foo: 1 } }])
      expect(issuePaths(put)).toEqual(["questions.1.settings.foo"])
      const extra = yield* send("PUT", `/surveys/${target.id}/questions`, { questions: [], more: 1 })
      expect(issuePaths(extra)).toEqual(["more"])
      const patch = yield* send("PATCH", `/surveys/${target.id}`, { tilte: "x" })
      expect(issuePaths(patch)).toEqual(["tilte"])
      expect((yield* surveyOf(target.id)).updatedAt).toBe(target.updatedAt)
    }))

  it.effect("an Idempotency-Key makes creation safe to retry", () =>
    Effect.gen(function*() {
      const before = yield* surveyCount
      const body = { title: "Once", questions: [{ id: "q1", type: "email", label: "Mail" }] }
      const first = yield* send("POST", "/surveys", body, { "idempotency-key": "create-once-1" })
      expect(first.status).toBe(201)
      expect(first.headers["idempotent-replayed"]).toBeUndefined()
      const again = yield* send("POST", "/surveys", body, { "idempotency-key": "create-once-1" })
      expect(again.status).toBe(201)
      expect(again.text).toBe(first.text)
      expect(again.headers["idempotent-replayed"]).toBe("true")
      expect(yield* surveyCount).toBe(before + 1)
      const other = yield* send("POST", "/surveys", { ...body, title: "Twice" }, { "idempotency-key": "create-once-1" })
      expect(issuePaths(other)).toEqual(["Idempotency-Key"])
      // A key of the same workspace limited to some surveys is refused, not answered the stored 201.
      const limited = yield* send("POST", "/surveys", body, { "idempotency-key": "create-once-1" }, TOKENS.limited)
      expect(limited.status).toBe(403)
      expect(limited.headers["idempotent-replayed"]).toBeUndefined()
      expect(limited.text).not.toContain(bodyOf(Schema.Struct({ id: Schema.String }), first).id)
      // Concurrent requests with one key create one survey.
      const both = yield* Effect.all(
        [0, 1, 2].map(() => send("POST", "/surveys", body, { "idempotency-key": "create-once-2" })),
        { concurrency: "unbounded" }
      )
      expect(new Set(both.map((r) => r.text)).size).toBe(1)
      expect(both.map((r) => r.status)).toEqual([201, 201, 201])
      expect(yield* surveyCount).toBe(before + 2)
    }))

  it.effect("PATCH changes the title or description and moves updatedAt and the ETag", () =>
    Effect.gen(function*() {
      const api = yield* editor
      const created = yield* create({ title: "Before", description: "Text" })
      const update = (payload: { readonly title?: string; readonly description?: string | null }) =>
        api.authoring.update({ ...survey(created.id), payload, headers: {}, withResponse: true })
      const [patched, first] = yield* update({ title: "After" })
      expect(first.status).toBe(200)
      expect(patched).toMatchObject({ title: "After", description: "Text" })
      expect(patched.updatedAt > created.updatedAt).toBe(true)
      const [, read] = yield* api.surveys.get({ ...survey(created.id), withResponse: true })
      expect(first.headers["etag"]).toBe(read.headers["etag"])
      const [cleared] = yield* update({ description: null })
      expect(cleared).toMatchObject({ title: "After", description: null })
      expect(cleared.updatedAt > patched.updatedAt).toBe(true)
      const [empty] = yield* update({})
      expect(empty.updatedAt > cleared.updatedAt).toBe(true)
      expect(yield* surveyOf(created.id)).toEqual(empty)
      expect(issuePaths(yield* send("PATCH", `/surveys/${created.id}`, { title: "" }))).toEqual(["title"])
    }))

  it.effect("a stale If-Match answers 412 precondition_failed and changes nothing", () =>
    Effect.gen(function*() {
      const api = yield* editor
      const created = yield* create({ title: "Guarded", questions: [{ id: "q1", type: "textarea", label: "One" }] })
      const target = survey(created.id)
      const [, read] = yield* api.surveys.get({ ...target, withResponse: true })
      const etag = read.headers["etag"] ?? ""
      const [changed, changedAnswer] = yield* api.authoring.update({
        ...target,
        payload: { title: "Guarded 2" },
        headers: { "if-match": etag },
        withResponse: true
      })
      const fresh = changedAnswer.headers["etag"] ?? ""
      expect(fresh).not.toBe(etag)
      const stale = { "if-match": etag }
      const writes = [
        api.authoring.update({ ...target, payload: { title: "Lost" }, headers: stale }),
        api.authoring.replaceQuestions({ ...target, payload: { questions: [{ id: "q2", type: "email", label: "Two" }] }, headers: stale }),
        api.authoring.publish({ ...target, headers: stale }),
        api.authoring.close({ ...target, headers: stale }),
        api.authoring.trash({ ...target, headers: stale }),
        api.authoring.update({ ...target, payload: { title: "Lost" }, headers: { "if-match": `W/${fresh}` } })
      ]
      for (const write of writes) {
        const refused = yield* Effect.flip(write)
        expect(refused._tag).toBe("PreconditionFailed")
      }
      // Raw: the error body is exactly code and message.
      const raw = yield* send("PATCH", `/surveys/${created.id}`, { title: "Lost" }, stale)
      expect(raw.status, raw.text).toBe(412)
      expect(bodyOf(ErrorBody, raw)).toEqual({ code: "precondition_failed", message: expect.any(String) })
      const after = yield* surveyOf(created.id)
      expect(after).toMatchObject({ title: "Guarded 2", status: "draft" })
      expect(after.updatedAt).toBe(changed.updatedAt)
      expect((yield* questionsOf(created.id)).map((q) => q.id)).toEqual(["q1"])
      // The current ETag, one of a list, or * is admitted.
      const [, put] = yield* api.authoring.replaceQuestions({
        ...target,
        payload: { questions: [{ id: "q2", type: "email", label: "Two" }] },
        headers: { "if-match": `"x", ${fresh}` },
        withResponse: true
      })
      const [, questions] = yield* api.questions.list({ ...target, withResponse: true })
      const questionsEtag = questions.headers["etag"]
      expect(put.headers["etag"]).toBe(questionsEtag)
      const published = yield* api.authoring.publish({ ...target, headers: { "if-match": questionsEtag ?? "" } })
      expect(published.status).toBe("published")
      const star = yield* api.authoring.update({ ...target, payload: { title: "Star" }, headers: { "if-match": "*" } })
      expect(star.title).toBe("Star")
    }))

  it.effect("keys: a viewer is refused every write, a limited key changes only its surveys and creates none", () =>
    Effect.gen(function*() {
      const before = yield* surveyOf("srv_main")
      const viewer = yield* clientFor(TOKENS.viewer)
      const draft = survey("srv_draft")
      const viewerCalls = [
        viewer.authoring.create({ payload: { title: "V" }, headers: {} }),
        viewer.authoring.update({ ...draft, payload: { title: "V" }, headers: {} }),
        viewer.authoring.replaceQuestions({ ...draft, payload: { questions: [] }, headers: {} }),
        viewer.authoring.publish({ ...draft, headers: {} }),
        viewer.authoring.close({ ...survey("srv_main"), headers: {} }),
        viewer.authoring.trash({ ...draft, headers: {} })
      ]
      for (const call of viewerCalls) {
        expect((yield* Effect.flip(call))._tag).toBe("Forbidden")
      }
      const limited = yield* clientFor(TOKENS.limited)
      const limitedCreate = yield* Effect.flip(limited.authoring.create({ payload: { title: "L" }, headers: {} }))
      expect(limitedCreate._tag).toBe("Forbidden")
      const limitedOther = yield* Effect.flip(limited.authoring.update({ ...draft, payload: { title: "L" }, headers: {} }))
      expect(limitedOther._tag).toBe("Forbidden")
      const limitedOwn = yield* limited.authoring.update({
        ...survey("srv_main"),
        payload: { description: "Changed by a limited key" },
        headers: {}
      })
      expect(limitedOwn).toMatchObject({ title: before.title, description: "Changed by a limited key" })
      const api = yield* editor
      for (const id of ["srv_other", "srv_trashed"]) {
        const missing = yield* Effect.flip(api.authoring.update({ ...survey(id), payload: { title: "F" }, headers: {} }))
        expect(missing._tag, id).toBe("NotFound")
      }
      expect((yield* surveyOf("srv_draft")).title).toBe("Draft")
    }))
})

/** How many rows of `table` belong to the survey. */
const rowsOf = (table: "events" | "responses", surveyId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(sql`SELECT COUNT(*) AS n FROM ${sql(table)} WHERE survey_id = ${surveyId}`.pipe(Effect.orDie), (rows) =>
      decodeAs(Schema.Array(Schema.Struct({ n: Schema.Number })), rows)[0]?.n ?? -1))

layer(TestServer(respondentFixture))("replacing the question list", (it) => {
  it.effect("keeps, adds, removes and reorders; removed questions' answers read with null fieldId and type; analytics and CSV follow", () =>
    Effect.gen(function*() {
      const api = yield* editor
      const main = survey("srv_main")
      const answersOf = (responseId: string) =>
        Effect.map(
          api.responses.get({ path: { ...main.path, responseId: ResponseId.make(responseId) } }),
          (response) => response.answers
        )
      const replace = (questions: typeof QuestionListInput.Type["questions"]) =>
        api.authoring.replaceQuestions({ ...main, payload: { questions }, headers: {} })
      // Read before, so that the stored renderings exist and must be invalidated.
      const before = yield* answersOf("rsp_1")
      expect(before.find((a) => a.value === "hello")).toMatchObject({ fieldId: "q_text", type: "textarea" })
      yield* api.responses.list({ ...main, urlParams: {} })
      const surveyBefore = yield* surveyOf("srv_main")

      const put = yield* replace([
        { id: "q_num", type: "number", label: "How many now" },
        { id: "q_new", type: "email", label: "New email question" },
        { id: "q_pick", type: "checkbox", label: "Pick", required: true, allowMultiple: true, options: [{ value: "a", label: "A" }, { value: "d", label: "D" }] },
        { id: "q_rank", type: "sort", label: "Rank", options: [{ value: "x" }, { value: "y" }] }
      ])
      expect(put.data.map((q) => [q.id, q.order])).toEqual([["q_num", 1], ["q_new", 2], ["q_pick", 3], ["q_rank", 4]])
      expect(put.data).toEqual(yield* questionsOf("srv_main"))
      const after = yield* surveyOf("srv_main")
      expect(after.questionCount).toBe(4)
      expect(after.updatedAt > surveyBefore.updatedAt).toBe(true)

      const answers = yield* answersOf("rsp_1")
      expect(answers.find((a) => a.value === "hello")).toEqual({ fieldId: null, type: null, value: "hello", values: ["hello"] })
      expect(answers.find((a) => a.fieldId === "q_pick")?.values).toEqual(["a", "c"])
      expect(answers.find((a) => a.fieldId === "q_num")?.type).toBe("number")
      const page = yield* get("/api/v1/surveys/srv_main/responses", TOKENS.editor)
      expect(page.text).not.toContain("\"fieldId\":\"q_text\"")
      expect(yield* storedQuestions("srv_main")).toContainEqual({ id: "q_text", type: "textarea", deleted: 1 })

      // What is counted changed: the analytics say so until the background rebuild is done.
      const meanwhile = yield* api.analytics.get(main)
      expect(meanwhile.stale).toBe(true)
      yield* settleAnalytics
      const analytics = yield* api.analytics.get(main)
      expect(analytics.stale).toBe(false)
      expect(analytics.questions.map((q) => q.id)).toEqual(["q_num", "q_new", "q_pick", "q_rank"])
      expect(analytics.questions.find((q) => q.id === "q_pick")?.respondentCount).toBe(2)
      expect(analytics.questions.find((q) => q.id === "q_num")?.respondentCount).toBe(1)

      const csv = yield* get("/api/v1/surveys/srv_main/responses?format=csv", TOKENS.editor)
      const header = csv.text.split("\n")[0] ?? ""
      expect(header).toContain("How many now")
      expect(header).toContain("New email question")
      expect(header).not.toContain("Say something")

      // A question with answers keeps its type; one without may change it; a deleted one with answers too.
      const refusedPaths = (questions: typeof QuestionListInput.Type["questions"]) =>
        Effect.map(Effect.flip(replace(questions)), (error) => {
          expect(error._tag).toBe("InvalidRequest")
          return error._tag === "InvalidRequest" ? (error.issues ?? []).map((i) => i.path) : []
        })
      const retyped = yield* refusedPaths([
        { id: "q_num", type: "textarea", label: "How many now" },
        { id: "q_new", type: "textarea", label: "New" }
      ])
      expect(retyped).toEqual(["questions.0.type"])
      const revived = yield* refusedPaths([{ id: "q_text", type: "email", label: "Back" }])
      expect(revived).toEqual(["questions.0.type"])
      expect((yield* questionsOf("srv_main")).map((q) => q.id)).toEqual(["q_num", "q_new", "q_pick", "q_rank"])
      const allowed = yield* replace([
        { id: "q_new", type: "textarea", label: "New" },
        { id: "q_text", type: "textarea", label: "Say something again" }
      ])
      expect(allowed.data.map((q) => q.id)).toEqual(["q_new", "q_text"])
      // A deleted question brought back brings its answers back.
      expect((yield* answersOf("rsp_1")).find((a) => a.value === "hello")?.fieldId).toBe("q_text")
      expect((yield* surveyOf("srv_main")).questionCount).toBe(2)
    }))

  it.effect("the respondent API and the survey page follow the new list at once", () =>
    Effect.gen(function*() {
      const token = bodyOf(
        Schema.Struct({ respondentToken: Schema.String }),
        yield* call("GET", "/s/srv_short", { headers: { accept: "application/json" } })
      ).respondentToken
      const respondent = yield* clientFor(token)
      const answer = (questionId: string) =>
        respondent.respondent.start({ payload: { answers: [{ questionId, values: ["hi"] }], finished: true }, headers: {} })
      expect((yield* answer("q_short_text")).responseId).toEqual(expect.any(String))
      const api = yield* editor
      const put = yield* api.authoring.replaceQuestions({
        ...survey("srv_short"),
        payload: { questions: [{ id: "q_short_new", type: "textarea", label: "A brand new label", required: true }] },
        headers: {}
      })
      expect(put.data.map((q) => q.id)).toEqual(["q_short_new"])
      const refused = yield* Effect.flip(answer("q_short_text"))
      expect(refused._tag === "InvalidRequest" ? (refused.issues ?? []).map((i) => i.path) : refused._tag)
        .toContain("answers.0.questionId")
      expect((yield* answer("q_short_new")).responseId).toEqual(expect.any(String))
      const html = yield* call("GET", "/s/srv_short", { headers: { accept: "text/html" } })
      expect(html.text).toContain("A brand new label")
      expect(html.text).not.toContain("Say hi")
    }))

  it.effect("a respondent answering while the questions are replaced gets 201 or 400, never 500, and nothing half-written", () =>
    Effect.gen(function*() {
      const api = yield* editor
      const created = yield* create({ title: "Race", questions: [{ id: "q_a", type: "textarea", label: "A" }] })
      expect((yield* api.authoring.publish({ ...survey(created.id), headers: {} })).status).toBe("published")
      const token = bodyOf(
        Schema.Struct({ respondentToken: Schema.String }),
        yield* call("GET", `/s/${created.id}`, { headers: { accept: "application/json" } })
      ).respondentToken
      const respondent = yield* clientFor(token)
      // 201 or a typed 400: any other answer fails the call with another error.
      const answer = Effect.either(
        respondent.respondent.start({ payload: { answers: [{ questionId: "q_a", values: ["hi"] }], finished: false }, headers: {} })
      )
      const lists = [[{ id: "q_b", type: "textarea", label: "B" }], [{ id: "q_a", type: "textarea", label: "A" }]] as const
      const rounds = yield* Effect.all(
        Array.from({ length: 12 }, (_, i) =>
          Effect.all([
            answer,
            api.authoring.replaceQuestions({ ...survey(created.id), payload: { questions: lists[i % 2] ?? [] }, headers: {} })
          ], { concurrency: "unbounded" })),
        { concurrency: 3 }
      )
      const started: Array<string> = []
      for (const [res, put] of rounds) {
        expect(put.data).toHaveLength(1)
        if (Either.isLeft(res)) {
          expect(res.left._tag === "InvalidRequest" ? (res.left.issues ?? []).map((i) => i.path) : res.left._tag)
            .toEqual(["answers.0.questionId"])
        } else started.push(res.right.responseId)
      }
      expect(yield* rowsOf("responses", created.id)).toBe(started.length)
      for (const id of started) {
        const stored = yield* api.responses.get({ path: { id: SurveyId.make(created.id), responseId: ResponseId.make(id) } })
        expect(stored.answers.map((a) => a.values)).toEqual([["hi"]])
      }
    }))
})

describe("lifecycle over HTTP", () => {
  it.live("publish and close write the CLI's events, delivered to the webhook; repeats write nothing; other moves are refused", () =>
    Effect.gen(function*() {
      const target = yield* receiver()
      const secret = yield* register(target.url)
      const api = yield* editor
      const created = yield* create({ title: "Lifecycle" })
      const path = survey(created.id)
      const move = (action: "publish" | "close") => api.authoring[action]({ ...path, headers: {} })
      const refusedPaths = (action: "publish" | "close") =>
        Effect.map(Effect.flip(move(action)), (error) => error._tag === "InvalidRequest" ? (error.issues ?? []).map((i) => i.path) : error._tag)

      expect(yield* refusedPaths("publish")).toEqual(["id"])
      expect(yield* refusedPaths("close")).toEqual(["id"])
      expect((yield* surveyOf(created.id)).status).toBe("draft")

      yield* api.authoring.replaceQuestions({ ...path, payload: { questions: [{ type: "textarea", label: "Q" }] }, headers: {} })
      // Each move, then the same again: 200 with the same survey, and no second event.
      const moves = [["publish", "published"], ["close", "closed"]] as const
      for (const [i, [action, status]] of moves.entries()) {
        const moved = yield* move(action)
        expect(moved).toMatchObject({ status, published: status === "published" })
        const repeated = yield* move(action)
        expect(repeated).toEqual(moved)
        expect(yield* rowsOf("events", created.id)).toBe(i + 1)
      }

      const delivered = yield* target.receivedWhere((all) => all.length >= 2)
      const events = delivered.map((d) => decodeAs(EventEnvelope, new Webhook(secret).verify(d.body, d.headers)))
      expect(events.map((e) => [e["type"], e["formId"]])).toEqual([
        ["survey.published", created.id],
        ["survey.closed", created.id]
      ])

      const reopened = yield* move("publish")
      expect(reopened.status).toBe("published")
      // Raw: the exact empty body of the 204.
      const trashed = yield* send("DELETE", `/surveys/${created.id}`)
      expect(trashed.status).toBe(204)
      expect(trashed.text).toBe("")
      for (const gone of [
        api.surveys.get(path),
        api.questions.list(path),
        api.authoring.update({ ...path, payload: { title: "x" }, headers: {} }),
        move("close"),
        api.authoring.trash({ ...path, headers: {} })
      ]) {
        expect((yield* Effect.flip(gone))._tag).toBe("NotFound")
      }
      expect(yield* rowsOf("events", created.id)).toBe(3)
    }).pipe(Effect.provide(WebhookWorld()), Effect.scoped))
})
