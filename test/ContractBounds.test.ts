import { OpenApi } from "@effect/platform"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Api } from "../src/Api.js"
import { MAX_ID_LENGTH, MAX_OPTIONS } from "../src/Domain/Bounds.js"
import { MAX_ISSUES } from "../src/Domain/Errors.js"
import { MAX_LABEL_LENGTH, MAX_QUESTIONS } from "../src/Domain/Question.js"
import { MAX_EXTERNAL_USER_ID_LENGTH } from "../src/Domain/Response.js"
import { SurveyId } from "../src/Domain/Ids.js"
import { clientFor } from "./support/ApiClient.js"
import { TOKENS } from "./support/Fixtures.js"
import { respondentFixture } from "./support/RespondentFixtures.js"
import { bodyOf, call, ErrorBody, get, TestServer } from "./support/TestServer.js"

type Json = Record<string, unknown>

const Json = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/** The value at `path` inside a JSON document. */
const at = (document: unknown, ...path: ReadonlyArray<string>): unknown =>
  path.reduce<unknown>((value, key) => (Schema.is(Json)(value) ? value[key] : undefined), document)

const send = (method: "POST" | "PUT", path: string, body: unknown) =>
  call(method, `/api/v1${path}`, { token: TOKENS.editor, body: JSON.stringify(body) })

const issuesOf = (res: { readonly body: unknown }) => bodyOf(ErrorBody, res).issues ?? []

const checkbox = (options: number, label = "Pick") => ({
  type: "checkbox",
  label,
  options: Array.from({ length: options }, (_, i) => ({ value: `option ${i}` }))
})

layer(TestServer(respondentFixture))("the contract's bounds", (it) => {
  it.effect("the served document is the one linted, and it declares the bounds the service enforces", () =>
    Effect.gen(function*() {
      const served = yield* get("/openapi.json")
      expect(served.status).toBe(200)
      // What `bun run lint:openapi` lints (scripts/openapi.ts) is what the service serves.
      expect(served.body).toEqual(JSON.parse(JSON.stringify(OpenApi.fromApi(Api))))
      const doc = served.body
      const schemas = (name: string, ...path: ReadonlyArray<string>) => at(doc, "components", "schemas", name, ...path)
      expect(schemas("QuestionInput", "properties", "options")).toMatchObject({ maxItems: MAX_OPTIONS })
      expect(schemas("QuestionInput", "properties", "label")).toMatchObject({ maxLength: MAX_LABEL_LENGTH })
      expect(schemas("QuestionListInput", "properties", "questions")).toMatchObject({ maxItems: MAX_QUESTIONS })
      expect(schemas("EmbedSessionRequest", "properties", "externalUserId")).toMatchObject({
        minLength: 1,
        maxLength: MAX_EXTERNAL_USER_ID_LENGTH
      })
      expect(schemas("Survey", "properties", "responseCount")).toMatchObject({
        type: "integer",
        format: "int64",
        minimum: 0,
        maximum: Number.MAX_SAFE_INTEGER
      })
      expect(schemas("Question", "properties", "options")).toMatchObject({ maxItems: MAX_OPTIONS })
      expect(schemas("Error_invalid_request", "properties", "issues")).toMatchObject({ maxItems: MAX_ISSUES })
      const getSurvey = at(doc, "paths", "/api/v1/surveys/{id}", "get")
      expect(at(getSurvey, "parameters")).toContainEqual(
        expect.objectContaining({ name: "id", in: "path", schema: expect.objectContaining({ maxLength: MAX_ID_LENGTH }) })
      )
      // Every answer declares the headers it carries, every operation the errors it can meet.
      expect(Object.keys(Schema.decodeUnknownSync(Json)(at(getSurvey, "responses")))).toEqual(
        expect.arrayContaining(["200", "400", "401", "403", "404", "429", "500", "503"])
      )
      expect(Object.keys(Schema.decodeUnknownSync(Json)(at(getSurvey, "responses", "200", "headers")))).toEqual(
        expect.arrayContaining(["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "ETag"])
      )
      expect(at(getSurvey, "responses", "429", "headers", "Retry-After")).toMatchObject({ required: true })
      expect(at(getSurvey, "responses", "401", "headers")).toBeUndefined()
      expect(at(doc, "servers")).toEqual([expect.objectContaining({ url: "/" })])
      expect(at(doc, "info", "license")).toMatchObject({ name: expect.any(String) })
      const tags = Schema.decodeUnknownSync(Schema.Array(Json))(at(doc, "tags"))
      for (const tag of tags) expect(tag.description, String(tag.name)).toEqual(expect.any(String))
    }))

  it.effect("options, questions and label one over the bound: 400 at the field, nothing changed", () =>
    Effect.gen(function*() {
      const before = yield* get("/api/v1/surveys/srv_short/questions", TOKENS.editor)
      const cases: ReadonlyArray<readonly [unknown, string]> = [
        [{ questions: [checkbox(MAX_OPTIONS + 1)] }, "questions.0.options"],
        [{ questions: [checkbox(2, "x".repeat(MAX_LABEL_LENGTH + 1))] }, "questions.0.label"],
        [{ questions: Array.from({ length: MAX_QUESTIONS + 1 }, () => checkbox(1)) }, "questions"]
      ]
      for (const [body, path] of cases) {
        const res = yield* send("PUT", "/surveys/srv_short/questions", body)
        expect(res.status, path).toBe(400)
        expect(bodyOf(ErrorBody, res).code).toBe("invalid_request")
        expect(issuesOf(res).map((issue) => issue.path), path).toContain(path)
        // The refusal counted against the quota and says so, as the document declares.
        expect(res.headers["ratelimit-remaining"], path).toEqual(expect.any(String))
      }
      const after = yield* get("/api/v1/surveys/srv_short/questions", TOKENS.editor)
      expect(after.body).toEqual(before.body)
      expect(after.headers["etag"]).toBe(before.headers["etag"])
      // A survey created with an over-long option list is refused too, and none is created.
      const created = yield* send("POST", "/surveys", { title: "Many options", questions: [checkbox(MAX_OPTIONS + 1)] })
      expect(issuesOf(created).map((issue) => issue.path)).toContain("questions.0.options")
      // At the bound itself, it is taken.
      const most = yield* send("PUT", "/surveys/srv_short/questions", {
        questions: [checkbox(MAX_OPTIONS, "x".repeat(MAX_LABEL_LENGTH))]
      })
      expect(most.status, most.text.slice(0, 300)).toBe(200)
    }))

  it.effect("externalUserId and a path id one over the bound: 400; at the bound: taken", () =>
    Effect.gen(function*() {
      const embed = (externalUserId: string) => send("POST", "/surveys/srv_all/embed-sessions", { externalUserId })
      const over = yield* embed("u".repeat(MAX_EXTERNAL_USER_ID_LENGTH + 1))
      expect(over.status).toBe(400)
      expect(issuesOf(over).map((issue) => issue.path)).toEqual(["externalUserId"])
      expect((yield* embed("u".repeat(MAX_EXTERNAL_USER_ID_LENGTH))).status).toBe(201)
      const erase = yield* send("POST", "/erasures", { externalUserId: "u".repeat(MAX_EXTERNAL_USER_ID_LENGTH + 1) })
      expect(issuesOf(erase).map((issue) => issue.path)).toEqual(["externalUserId"])
      const longId = yield* get(`/api/v1/surveys/${"s".repeat(MAX_ID_LENGTH + 1)}`, TOKENS.editor)
      expect(longId.status).toBe(400)
      expect(issuesOf(longId).map((issue) => issue.path)).toEqual(["id"])
      const api = yield* clientFor(TOKENS.editor)
      const longest = yield* Effect.flip(api.surveys.get({ path: { id: SurveyId.make("s".repeat(MAX_ID_LENGTH)) } }))
      expect(longest._tag).toBe("NotFound")
    }))

  it.effect("a body with more problems than the cap lists the first MAX_ISSUES of them", () =>
    Effect.gen(function*() {
      const res = yield* send("POST", "/surveys", {
        title: "Many problems",
        questions: Array.from({ length: MAX_ISSUES + 10 }, () => ({ type: "email", label: "E", allowMultiple: true }))
      })
      expect(res.status).toBe(400)
      expect(issuesOf(res).length).toBe(MAX_ISSUES)
    }))
})

describe("cross-origin requests", () => {
  layer(TestServer(respondentFixture))("preflights", (it) => {
    it.effect("are refused with the documented body and no Access-Control header", () =>
      Effect.gen(function*() {
        for (const path of ["/api/v1/surveys", "/api/v1/surveys/srv_all/responses", "/respond/v1/responses"]) {
          const res = yield* call("OPTIONS", path, {
            headers: {
              origin: "https://elsewhere.example",
              "access-control-request-method": "GET",
              "access-control-request-headers": "authorization"
            }
          })
          expect(res.status, path).toBe(403)
          expect(bodyOf(ErrorBody, res).code).toBe("forbidden")
          expect(Object.keys(res.headers).filter((name) => name.startsWith("access-control-")), path).toEqual([])
        }
        // An ordinary answer grants no origin either.
        const listed = yield* call("GET", "/api/v1/surveys", { token: TOKENS.editor, headers: { origin: "https://elsewhere.example" } })
        expect(listed.status).toBe(200)
        expect(listed.headers["access-control-allow-origin"]).toBeUndefined()
      }))
  })
})
