import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, FastCheck as fc } from "effect"
import { Aggregator } from "../src/Analytics/Aggregator.js"
import { seedDemo } from "../src/Demo/Seed.js"
import { decodeFixture } from "../src/Fixtures/Import.js"
import { SurveyId } from "../src/Domain/Ids.js"
import type { QuestionDefinition, StoredQuestionType } from "../src/Domain/Question.js"
import { clientFor } from "./support/ApiClient.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { writeResponse } from "./support/AnalyticsWrites.js"
import { get, TestServer } from "./support/TestServer.js"

/** What a survey's respondents gave and what is made of it: the responses, the analytics and the CSV. */
const outputsOf = (surveyId: string, token: string) =>
  Effect.gen(function*() {
    yield* Effect.flatMap(Aggregator, (aggregator) => aggregator.catchUp())
    const responses = yield* get(`/api/v1/surveys/${surveyId}/responses?limit=100`, token)
    const analytics = yield* get(`/api/v1/surveys/${surveyId}/analytics`, token)
    const csv = yield* get(`/api/v1/surveys/${surveyId}/responses.csv`, token)
    expect([responses.status, analytics.status, csv.status]).toEqual([200, 200, 200])
    return { responses: responses.body, analytics: analytics.body, csv: csv.text }
  })

/** GET …/definition through the typed client, with its ETag. */
const definitionOf = (surveyId: string, token: string) =>
  Effect.gen(function*() {
    const api = yield* clientFor(token)
    const [definition, response] = yield* api.questions.definition({ path: { id: SurveyId.make(surveyId) }, withResponse: true })
    const etag = response.headers["etag"]
    if (etag === undefined) return yield* Effect.dieMessage("the definition carries no ETag")
    return { definition, etag }
  })

/** PUT …/questions through the typed client with `If-Match`. */
const putQuestions = (surveyId: string, token: string, etag: string, questions: ReadonlyArray<QuestionDefinition>) =>
  Effect.flatMap(clientFor(token), (api) =>
    api.authoring.replaceQuestions({ path: { id: SurveyId.make(surveyId) }, headers: { "if-match": etag }, payload: { questions } }))

const withOptions: ReadonlySet<string> = new Set(["checkbox", "scale", "sort"])

/** A generated question of any type, sections included, with the settings its type may have. */
const questionArb = (index: number) =>
  fc.record({
    type: fc.constantFrom<StoredQuestionType>(
      "section", "textarea", "email", "checkbox", "number", "calendar", "country", "heatmap", "scale", "sort"
    ),
    label: fc.string({ minLength: 1, maxLength: 40 }),
    required: fc.boolean(),
    multiple: fc.boolean(),
    optionCount: fc.integer({ min: 1, max: 4 }),
    labelled: fc.boolean(),
    image: fc.constantFrom("/assets/demo-dashboard.svg", "https://example.com/picture.png", undefined),
    optionType: fc.constantFrom<"text" | "image" | undefined>("text", "image", undefined)
  }).map((g) => {
    const options = withOptions.has(g.type)
      ? Array.from({ length: g.optionCount }, (_, k) => {
        const value = g.type === "scale" ? String(k - 1) : `o${k}`
        return g.labelled ? { value, label: `Option ${k}` } : { value }
      })
      : undefined
    const settings = g.type === "heatmap" && g.image !== undefined
      ? { imageUrl: g.image }
      : g.type === "checkbox" && g.optionType !== undefined
      ? { optionType: g.optionType }
      : undefined
    return {
      id: `q${index}`,
      type: g.type,
      label: g.label,
      ...(g.required ? { required: true } : {}),
      ...(g.type === "checkbox" && g.multiple ? { allowMultiple: true } : {}),
      ...(options === undefined ? {} : { options }),
      ...(settings === undefined ? {} : { settings })
    }
  })

const surveyArb = fc.integer({ min: 1, max: 8 }).chain((n) =>
  fc.tuple(...Array.from({ length: n }, (_, i) => questionArb(i)))
)

/** Values a respondent could give to a question of this type. */
const valuesFor = (type: StoredQuestionType, options: ReadonlyArray<{ readonly value: string }>, seed: number) => {
  switch (type) {
    case "checkbox":
    case "scale":
      return [options[seed % options.length]?.value ?? ""]
    case "sort":
      return options.map((o) => o.value)
    case "number":
      return [String(seed)]
    case "calendar":
      return ["2026-03-0" + String(1 + (seed % 9))]
    case "country":
      return [seed % 2 === 0 ? "DE" : "FR"]
    case "email":
      return [`p${seed}@example.com`]
    case "heatmap":
      return [`${seed % 100},${(seed * 7) % 100}`]
    case "textarea":
      return [`text ${seed}`]
    case "section":
      return []
  }
}

let created = 0

layer(TestServer(baseFixture))("GET /surveys/{id}/definition (v1-extensions §X7)", (it) => {
  it.effect("every demo survey, sections and relative image paths included, goes back through PUT unchanged", () =>
    Effect.gen(function*() {
      const { editorToken, viewerToken } = yield* seedDemo()
      const api = yield* clientFor(editorToken)
      const surveys = yield* api.surveys.list({ urlParams: { limit: 100 } })
      expect(surveys.data.length).toBeGreaterThan(1)
      for (const survey of surveys.data) {
        const before = yield* definitionOf(survey.id, viewerToken)
        const outputs = yield* outputsOf(survey.id, editorToken)
        const put = yield* putQuestions(survey.id, editorToken, before.etag, before.definition.questions)
        expect(put.data.length).toBe(before.definition.questions.filter((q) => q.type !== "section").length)
        const after = yield* definitionOf(survey.id, editorToken)
        expect(after.definition).toEqual(before.definition)
        expect(yield* outputsOf(survey.id, editorToken)).toEqual(outputs)
      }
      const demo = (yield* definitionOf("srv_demo_feedback", viewerToken)).definition
      expect(demo.questions.filter((q) => q.type === "section").map((q) => q.label)).toEqual(["About you", "Our product"])
      expect(demo.questions.find((q) => q.type === "heatmap")?.settings).toEqual({ imageUrl: "/assets/demo-dashboard.svg" })
      // Nothing read-only: no order, no counts.
      expect(Object.keys(demo).sort()).toEqual(["description", "questions", "title"])
      expect(Object.keys(demo.questions[0] ?? {}).sort()).toEqual(
        ["allowMultiple", "id", "label", "options", "required", "settings", "type"]
      )
    }))

  it.effect("the editing recipe: read the definition, change a label, PUT with its ETag; a stale ETag changes nothing", () =>
    Effect.gen(function*() {
      const { editorToken } = yield* seedDemo()
      const { definition, etag } = yield* definitionOf("srv_demo_feedback", editorToken)
      const edited = definition.questions.map((q) => q.id === "q_demo_email" ? { ...q, label: "Your work email" } : q)
      yield* putQuestions("srv_demo_feedback", editorToken, etag, edited)
      const after = yield* definitionOf("srv_demo_feedback", editorToken)
      expect(after.definition.questions).toEqual(edited)
      expect(after.etag).not.toBe(etag)
      // The version read first is stale now: 412, and the survey keeps the edit.
      const stale = yield* putQuestions("srv_demo_feedback", editorToken, etag, definition.questions).pipe(Effect.flip)
      expect(stale._tag).toBe("PreconditionFailed")
      expect((yield* definitionOf("srv_demo_feedback", editorToken)).definition.questions).toEqual(edited)
    }))

  it.effect("404 for an unknown survey; any key that reads the survey reads it", () =>
    Effect.gen(function*() {
      const { viewerToken } = yield* seedDemo()
      const api = yield* clientFor(viewerToken)
      const missing = yield* api.questions.definition({ path: { id: SurveyId.make("srv_nope") } }).pipe(Effect.flip)
      expect(missing._tag).toBe("NotFound")
    }))

  it.effect.prop(
    "for generated surveys, definition → PUT → definition is the identity; answers, analytics and the CSV stay",
    { survey: surveyArb },
    ({ survey }) =>
      Effect.gen(function*() {
        // The base fixture's plan has room for the calls of every run.
        const editorToken = TOKENS.editor
        const api = yield* clientFor(editorToken)
        const made = yield* api.authoring.create({ headers: {}, payload: { title: `Generated ${created++}`, questions: survey } })
        const before = yield* definitionOf(made.id, editorToken)
        // What was sent, with the defaults filled in.
        expect(before.definition.questions).toEqual(survey.map((q) => ({
          id: q.id,
          type: q.type,
          label: q.label,
          required: q.required ?? false,
          allowMultiple: q.allowMultiple ?? false,
          options: (q.options ?? []).map((o) => ({ value: o.value, label: "label" in o ? o.label : o.value })),
          settings: q.settings ?? {}
        })))
        const types = new Map(survey.map((q) => [q.id, q.type]))
        for (let r = 0; r < 3; r++) {
          yield* writeResponse({
            id: `rsp_${made.id}_${r}`,
            surveyId: made.id,
            completed: r !== 1,
            createdAt: `2026-03-0${r + 1}T10:00:00.000Z`,
            answers: survey.filter((q) => q.type !== "section").map((q) => ({
              questionId: q.id,
              values: valuesFor(q.type, q.options ?? [], r + q.id.length)
            })),
            types
          })
        }
        const outputs = yield* outputsOf(made.id, editorToken)
        yield* putQuestions(made.id, editorToken, before.etag, before.definition.questions)
        const after = yield* definitionOf(made.id, editorToken)
        expect(after.definition).toEqual(before.definition)
        expect(yield* outputsOf(made.id, editorToken)).toEqual(outputs)
      }),
    { timeout: 300_000, fastCheck: { numRuns: 8 } }
  )
})

describe("import: every current question is one authoring accepts back", () => {
  it.effect("a question with an unknown setting, a bad image or options on the wrong type is refused with its path", () =>
    Effect.gen(function*() {
      const survey = (questions: ReadonlyArray<Record<string, unknown>>) => ({
        surveys: [{
          id: "srv_x",
          workspaceId: "ws_x",
          title: "X",
          status: "draft",
          createdAt: "2026-01-01T00:00:00Z",
          updatedAt: "2026-01-01T00:00:00Z",
          questions
        }]
      })
      const refused = yield* decodeFixture(survey([
        { id: "q_ok", type: "heatmap", label: "H", order: 1, settings: { imageUrl: "/assets/demo-dashboard.svg" } },
        { id: "q_foo", type: "textarea", label: "T", order: 2, settings: { foo: 1 } },
        { id: "q_img", type: "heatmap", label: "H", order: 3, settings: { imageUrl: "http://example.com/a.png" } },
        { id: "q_opt", type: "email", label: "E", order: 4, options: [{ value: "a", label: "A" }] },
        { id: "q_gone", type: "email", label: "", order: 5, settings: { foo: 1 }, deleted: true }
      ])).pipe(Effect.flip)
      expect(refused.message.split("\n").slice(1).map((line) => line.trim().split(":")[0])).toEqual([
        "surveys.0.questions.1.settings.foo",
        "surveys.0.questions.2.settings.imageUrl",
        "surveys.0.questions.3.options"
      ])
      // The demo's own kind of question passes.
      const accepted = yield* decodeFixture(survey([
        { id: "q_ok", type: "heatmap", label: "H", order: 1, settings: { imageUrl: "/assets/demo-dashboard.svg" } }
      ]))
      expect(accepted.surveys[0]?.questions).toHaveLength(1)
    }))
})
