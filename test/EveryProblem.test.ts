import { HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Api } from "../src/Api.js"
import { InvalidRequest } from "../src/Domain/Errors.js"
import { SurveyId } from "../src/Domain/Ids.js"
import { MAX_ISSUES } from "../src/Http/Issues.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { bodyOf, call, ErrorBody, TestServer } from "./support/TestServer.js"

/**
 * The typed client, each request's body replaced by `body` as it is: the client encodes only what
 * its schemas admit, and these bodies are the ones they refuse. The answer is decoded by the
 * client, so a 400 arrives as the typed `InvalidRequest` the document declares.
 */
const sending = (body: unknown) =>
  HttpApiClient.make(Api, {
    transformClient: HttpClient.mapRequest((request) =>
      HttpClientRequest.bodyUnsafeJson(HttpClientRequest.bearerToken(request, TOKENS.editor), body)
    )
  })

const draft = SurveyId.make("srv_draft")

/** PUT …/questions of the draft with `body`: its `invalid_request`. */
const refusedQuestions = (body: unknown) =>
  Effect.gen(function*() {
    const api = yield* sending(body)
    const error = yield* api.authoring.replaceQuestions({ path: { id: draft }, headers: {}, payload: { questions: [] } }).pipe(
      Effect.flip
    )
    if (!(error instanceof InvalidRequest)) return yield* Effect.dieMessage(`not an invalid_request: ${String(error)}`)
    return error
  })

/** The draft's definition, read through the typed client. */
const definition = Effect.flatMap(
  HttpApiClient.make(Api, {
    transformClient: HttpClient.mapRequest((request) => HttpClientRequest.bearerToken(request, TOKENS.editor))
  }),
  (api) => api.questions.definition({ path: { id: draft } })
)

const paths = (error: InvalidRequest) => (error.issues ?? []).map((issue) => issue.path)

layer(TestServer(baseFixture))("a body's problems, the shape's and the rules', in one answer (decisions §2)", (it) => {
  it.effect("a question list with shape and rule problems answers them all, ordered by path, and changes nothing", () =>
    Effect.gen(function*() {
      const before = yield* definition
      const error = yield* refusedQuestions({
        questions: [
          { id: "q_a", type: "checkbox", label: "Roles" },
          { type: "bogus", label: "B" },
          { id: "q_a", type: "textarea", label: "Again" },
          { type: "email", label: "" },
          { type: "textarea", label: "T", options: [{ value: "x" }] },
          { type: "scale", label: "S", options: [{ value: "1" }, { value: "high" }, { value: "1" }] }
        ]
      })
      expect(error.issues).toEqual([
        { path: "questions.0.options", message: "a checkbox question needs options" },
        {
          path: "questions.1.type",
          message: "must be one of textarea, email, checkbox, number, calendar, country, heatmap, scale, sort, section (got \"bogus\")"
        },
        { path: "questions.2.id", message: "the same id as questions.0" },
        { path: "questions.3.label", message: "must be text of 1 to 2,000 characters" },
        { path: "questions.4.options", message: "only checkbox, scale and sort questions have options" },
        { path: "questions.5.options.1.value", message: "a scale's values are integers" },
        { path: "questions.5.options.2.value", message: "the same value as an option before it" }
      ])
      expect(error.message).toBe("Invalid `questions.0.options`: a checkbox question needs options. (6 more problems in `issues`)")
      expect(yield* definition).toEqual(before)
    }))

  it.effect("positions order as numbers: questions.2 comes before questions.10", () =>
    Effect.gen(function*() {
      const questions: Array<unknown> = Array.from({ length: 11 }, (_, i) => ({ type: "textarea", label: `Q${i}` }))
      questions[10] = { type: "textarea", label: 7 }
      questions[2] = { type: "textarea", label: "Q2", allowMultiple: true }
      const error = yield* refusedQuestions({ questions })
      expect(error.issues).toEqual([
        { path: "questions.2.allowMultiple", message: "only a checkbox question allows multiple answers" },
        { path: "questions.10.label", message: "must be text of 1 to 2,000 characters" }
      ])
    }))

  it.effect("a new survey: its title and its questions' rules in one answer", () =>
    Effect.gen(function*() {
      const api = yield* sending({
        title: "",
        questions: [{ type: "email", label: "E", settings: { imageUrl: "/assets/demo-dashboard.svg" } }, { type: "sort", label: 3 }]
      })
      const error = yield* api.authoring.create({ headers: {}, payload: { title: "ok" } }).pipe(Effect.flip)
      if (!(error instanceof InvalidRequest)) return yield* Effect.dieMessage(`not an invalid_request: ${String(error)}`)
      expect(error.issues).toEqual([
        { path: "questions.0.settings.imageUrl", message: "only a heatmap question has an image" },
        { path: "questions.1.label", message: "must be text of 1 to 2,000 characters" },
        { path: "title", message: "must be text of 1 to 500 characters" }
      ])
    }))

  it.effect("the cap counts the problems of both kinds", () =>
    Effect.gen(function*() {
      const questions = Array.from({ length: 30 }, (_, i) =>
        i % 2 === 0 ? { type: "bogus", label: `B${i}` } : { type: "scale", label: `S${i}` })
      const error = yield* refusedQuestions({ questions })
      expect(error.issues).toHaveLength(MAX_ISSUES)
      expect(paths(error).slice(0, 4)).toEqual(["questions.0.type", "questions.1.options", "questions.2.type", "questions.3.options"])
      expect(error.message).toMatch(/\(29 more problems; the first 20 are listed in `issues`\)$/)
    }))

  it.effect("a list that is not a list, or is too long, is one problem, in words", () =>
    Effect.gen(function*() {
      const notList = yield* refusedQuestions({ questions: { type: "email", label: "E" } })
      expect(notList.issues).toEqual([{ path: "questions", message: "must be a list" }])
      const long = yield* refusedQuestions({ questions: Array.from({ length: 201 }, () => ({ type: "bogus", label: "" })) })
      expect(long.issues).toEqual([{ path: "questions", message: "at most 200 questions" }])
    }))

  it.effect("raw: the same answer to a hand-written body; a body that is not JSON says so", () =>
    Effect.gen(function*() {
      const mixed = yield* call("PUT", "/api/v1/surveys/srv_draft/questions", {
        token: TOKENS.editor,
        body: JSON.stringify({ questions: [{ type: "sort", label: "S" }, { type: "email" }] })
      })
      expect(mixed.status).toBe(400)
      expect(bodyOf(ErrorBody, mixed)).toEqual({
        code: "invalid_request",
        message: "Invalid `questions.0.options`: a sort question needs options. (1 more problem in `issues`)",
        issues: [
          { path: "questions.0.options", message: "a sort question needs options" },
          { path: "questions.1.label", message: "is required" }
        ]
      })
      for (const body of ["{\"questions\": [", "", "questions=1"]) {
        const malformed = yield* call("PUT", "/api/v1/surveys/srv_draft/questions", { token: TOKENS.editor, body })
        expect(malformed.status, body).toBe(400)
        expect(bodyOf(ErrorBody, malformed), body).toEqual({
          code: "invalid_request",
          message: "The request body is missing or is not valid JSON.",
          issues: [{ path: "", message: "expected a JSON body" }]
        })
      }
    }))

  it.effect("the OpenAPI document still declares the list as QuestionInput items", () =>
    Effect.gen(function*() {
      const document = yield* call("GET", "/openapi.json")
      const text = document.text
      const parsed: unknown = JSON.parse(text)
      expect(parsed).toMatchObject({
        components: {
          schemas: {
            QuestionListInput: {
              properties: { questions: { type: "array", maxItems: 200, items: { $ref: "#/components/schemas/QuestionInput" } } }
            },
            SurveyCreate: {
              properties: { questions: { type: "array", maxItems: 200, items: { $ref: "#/components/schemas/QuestionInput" } } }
            }
          }
        }
      })
    }))
})
