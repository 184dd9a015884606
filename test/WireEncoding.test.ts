import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, FastCheck as fc, Schema } from "effect"
import { aggregate, analyticsOf } from "../src/Analytics/Compute.js"
import { Analytics } from "../src/Domain/Analytics.js"
import { QuestionList, QuestionType } from "../src/Domain/Question.js"
import { SurveyResponse } from "../src/Domain/Response.js"
import { Survey, SurveyStatus } from "../src/Domain/Survey.js"
import { pageJson } from "../src/Http/PreEncoded.js"
import { ApiQuestionColumns, apiQuestionRowOf } from "../src/Questions/QuestionRepo.js"
import { questionWire } from "../src/Questions/QuestionWire.js"
import { parseStoredValues } from "../src/Responses/AnswerDocumentRepo.js"
import { answersByResponse, answersJson } from "../src/Responses/AnswerWire.js"
import { ResponsePage } from "../src/Responses/Api.js"
import { assemble, assembleJson, ListedColumns, renderedItems } from "../src/Responses/ResponseRepo.js"
import { SurveyPage } from "../src/Surveys/Api.js"
import { Usage } from "../src/Quota/Api.js"
import { SurveyColumns, surveyListWireOf } from "../src/Surveys/SurveyRepo.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { clientFor } from "./support/ApiClient.js"
import { bodyOf, get, TestServer } from "./support/TestServer.js"
import { ResponseId, SurveyId } from "../src/Domain/Ids.js"

/** The body must be exactly what the declared schema encodes from its own decoding: same fields, same order. */
const schemaEncoded = <A, I>(schema: Schema.Schema<A, I>, text: string) =>
  JSON.stringify(Schema.encodeSync(schema)(Schema.decodeUnknownSync(schema)(JSON.parse(text))))

layer(TestServer(baseFixture))("pre-encoded read answers match their declared schemas", (it) => {
  const cases = [
    ["/api/v1/surveys", SurveyPage],
    ["/api/v1/surveys?limit=1", SurveyPage],
    ["/api/v1/surveys/srv_main", Survey],
    ["/api/v1/surveys/srv_main/questions", QuestionList],
    ["/api/v1/surveys/srv_main/analytics", Analytics],
    ["/api/v1/surveys/srv_main/responses", ResponsePage],
    ["/api/v1/surveys/srv_main/responses?limit=1&status=completed", ResponsePage],
    ["/api/v1/usage", Usage]
  ] as const
  for (const [path, schema] of cases) {
    it.effect(`GET ${path}`, () =>
      Effect.gen(function*() {
        const res = yield* get(path, TOKENS.editor)
        expect(res.status).toBe(200)
        expect(res.headers["content-type"]).toBe("application/json")
        expect(res.text).toBe(schemaEncoded(schema as Schema.Schema<unknown, unknown>, res.text))
      }))
  }

  it.effect("responses keep question order, deleted questions last, choice values as JSON", () =>
    Effect.gen(function*() {
      const res = yield* get("/api/v1/surveys/srv_main/responses", TOKENS.editor)
      const page = Schema.decodeUnknownSync(ResponsePage)(res.body)
      expect(page.data.map((r) => r.id)).toEqual(["rsp_1", "rsp_2", "rsp_3"])
      expect(page.data[0]?.answers).toEqual([
        { fieldId: "q_text", type: "textarea", value: "hello", values: ["hello"] },
        { fieldId: "q_pick", type: "checkbox", value: "[\"a\",\"c\"]", values: ["a", "c"] },
        { fieldId: "q_rank", type: "sort", value: "y", values: ["y"] },
        { fieldId: "q_num", type: "number", value: "42", values: ["42"] },
        { fieldId: null, type: null, value: "old@example.com", values: ["old@example.com"] }
      ])
      const one = yield* get("/api/v1/surveys/srv_main/responses/rsp_1", TOKENS.editor)
      const items = Schema.Struct({ data: Schema.Array(Schema.Unknown) })
      expect(one.body).toEqual(res.body !== undefined ? bodyOf(items, res).data[0] : undefined)
    }))

  it.effect("questions leave out sections and deleted questions", () =>
    Effect.gen(function*() {
      const api = yield* clientFor(TOKENS.editor)
      const list = yield* api.questions.list({ path: { id: SurveyId.make("srv_main") } })
      expect(list.data.map((q) => q.id)).toEqual(["q_text", "q_pick", "q_rank", "q_num"])
    }))
})

const types = ["textarea", "email", "checkbox", "number", "sort", "section"] as const

const answerArb = (responseIds: ReadonlyArray<string>) =>
  fc.record({
    responseId: fc.constantFrom(...responseIds),
    questionId: fc.stringMatching(/^q_[a-z0-9]{1,4}$/),
    value: fc.string(),
    values: fc.array(fc.string({ unit: "binary" }), { maxLength: 4 }),
    type: fc.option(fc.constantFrom(...types), { nil: null }),
    position: fc.option(fc.integer({ min: 0, max: 50 }), { nil: null })
  })

describe("assembleJson", () => {
  it.prop(
    "equals the schema encoding of assemble, byte for byte",
    [fc.uniqueArray(fc.stringMatching(/^rsp_[a-z0-9]{1,6}$/), { minLength: 1, maxLength: 6 }).chain((ids) =>
      fc.tuple(
        fc.constant(ids),
        fc.uniqueArray(answerArb(ids), { maxLength: 30, selector: (a) => `${a.responseId}/${a.questionId}` }),
        fc.array(fc.option(fc.string(), { nil: null }), { minLength: ids.length, maxLength: ids.length })
      )
    )],
    ([[ids, answers, externals]]) => {
      const rows = ids.map((id, i) => ({
        id: ResponseId.make(id),
        surveyId: SurveyId.make("srv_x"),
        externalUserId: externals[i] ?? null,
        completedAt: i % 2 === 0 ? "2026-01-02T00:00:00.000Z" : null,
        createdAt: "2026-01-01T00:00:00.000Z",
        updatedAt: i % 3 === 0 ? "2026-01-03T00:00:00.000Z" : "2026-01-01T00:00:00.000Z"
      }))
      const stored = answers.map((a) => ({ ...a, values: JSON.stringify(a.values) }))
      const viaSchema = Schema.encodeSync(Schema.Array(SurveyResponse))(assemble(rows, stored))
      const texts = assembleJson(rows, stored)
      expect(`[${texts.join(",")}]`).toBe(JSON.stringify(viaSchema))
    }
  )
})

// Every wire builder that writes a body without the schema (src/Http/PreEncoded.ts) against the
// declared schema's encoding of the same value (`Schema.encode`, then `JSON.stringify`), for
// generated rows: strings that JSON must escape or that JavaScript treats apart (quotes,
// backslashes, control characters, U+2028/U+2029, lone surrogates, astral characters) and the
// edges of the numbers.

const awkwardText = fc.oneof(
  fc.string({ unit: "binary", maxLength: 10 }),
  fc.array(
    fc.constantFrom("\"", "\\", "\\u2028", "\u2028", "\u2029", "\n", "\r\n", "\t", "\u0000", "\u001f", "\u007f", "é",
      "😀", "\ud800", "\udfff", "</script>", "'", "=1+1", " ", ""),
    { maxLength: 6 }
  ).map((parts) => parts.join(""))
)
const instant = fc.date({ min: new Date(0), max: new Date("9999-12-31T23:59:59.999Z"), noInvalidDate: true })
  .map((d) => d.toISOString())
const count = fc.oneof(fc.constantFrom(0, 1, 2 ** 31, Number.MAX_SAFE_INTEGER), fc.nat())
const someNumber = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0, -0, Number.MIN_VALUE, Number.MAX_VALUE, -Number.MAX_VALUE, 0.1 + 0.2, 1e21, 1e-7)
)

/** What the declared schema writes for the value the wire text stands for. */
const viaSchema = <A, I>(schema: Schema.Schema<A, I>, wire: unknown) =>
  JSON.stringify(Schema.encodeSync(schema)(Schema.decodeUnknownSync(schema)(wire)))

/** A value row of `shape`: the fields' values in declared order, as `.values` returns them. */
const valueRow = (shape: { readonly fields: object }, fields: Readonly<Record<string, unknown>>) =>
  Object.keys(shape.fields).map((key) => fields[key])

describe("pre-encoded wire builders equal the declared schema's encoding", () => {
  const surveyFields = fc.record({
    id: awkwardText,
    workspaceId: awkwardText,
    title: awkwardText,
    description: fc.option(awkwardText, { nil: null }),
    status: fc.constantFrom(...SurveyStatus.literals),
    trashed: fc.constantFrom(0, 1),
    questionCount: count,
    responseCount: count,
    createdAt: instant,
    updatedAt: instant
  })

  it.prop("a survey and a page of surveys", [fc.array(surveyFields, { maxLength: 5 }), fc.option(awkwardText, { nil: null })], ([rows, cursor]) => {
    const wires = rows.map((fields) => surveyListWireOf(valueRow(SurveyColumns, fields)))
    for (const wire of wires) expect(JSON.stringify(wire)).toBe(viaSchema(Survey, wire))
    const page = { data: wires, nextCursor: cursor }
    expect(JSON.stringify(page)).toBe(viaSchema(SurveyPage, page))
  })

  const questionFields = fc.record({
    id: awkwardText,
    type: fc.constantFrom(...QuestionType.literals),
    label: awkwardText,
    required: fc.constantFrom(0, 1),
    allowMultiple: fc.constantFrom(0, 1),
    position: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
    options: fc.array(fc.record({ value: awkwardText, label: awkwardText }), { maxLength: 4 }).map((o) => JSON.stringify(o))
  })

  it.prop("a list of questions", [fc.array(questionFields, { maxLength: 5 })], ([rows]) => {
    const list = { data: rows.map((fields) => questionWire(apiQuestionRowOf(valueRow(ApiQuestionColumns, fields)))) }
    expect(JSON.stringify(list)).toBe(viaSchema(QuestionList, list))
  })

  const storedTypes = ["textarea", "email", "checkbox", "number", "sort", "scale", "section"] as const
  const analyticsCase = fc.uniqueArray(
    fc.record({
      id: awkwardText,
      type: fc.constantFrom(...storedTypes),
      position: fc.integer({ min: 0, max: 5 }),
      deleted: fc.boolean(),
      options: fc.uniqueArray(fc.record({ value: awkwardText, label: awkwardText }), { maxLength: 3, selector: (o) => o.value })
    }),
    { maxLength: 5, selector: (q: { readonly id: string }) => q.id }
  ).chain((questions) =>
    fc.tuple(
      fc.constant(questions),
      fc.array(
        fc.record({
          completed: fc.boolean(),
          answers: fc.array(
            fc.record({
              questionId: questions.length === 0 ? awkwardText : fc.constantFrom(...questions.map((q) => q.id)),
              values: fc.array(fc.oneof(awkwardText, someNumber.map(String)), { maxLength: 3 })
            }),
            { maxLength: 4 }
          )
        }),
        { maxLength: 6 }
      )
    )
  )

  it.prop("analytics", [analyticsCase], ([[questions, responses]]) => {
    const wire = analyticsOf(questions, aggregate(questions, responses))
    expect(JSON.stringify(wire)).toBe(viaSchema(Analytics, wire))
  })

  const listedCase = fc.uniqueArray(fc.stringMatching(/^rsp_[a-z0-9]{1,6}$/), { minLength: 1, maxLength: 5 }).chain((ids) =>
    fc.tuple(
      fc.tuple(...ids.map((id) =>
        fc.record({
          id: fc.constant(ResponseId.make(id)),
          surveyId: awkwardText.map(SurveyId.make),
          externalUserId: fc.option(awkwardText, { nil: null }),
          completedAt: fc.option(instant, { nil: null }),
          createdAt: instant,
          updatedAt: instant
        })
      )),
      fc.uniqueArray(
        fc.record({
          responseId: fc.constantFrom(...ids),
          questionId: awkwardText,
          value: awkwardText,
          values: fc.array(awkwardText, { maxLength: 3 }).map((v) => JSON.stringify(v)),
          type: fc.option(fc.constantFrom(...types), { nil: null }),
          position: fc.option(fc.integer({ min: 0, max: 50 }), { nil: null })
        }),
        { maxLength: 12, selector: (a) => `${a.responseId}/${a.questionId}` }
      ),
      fc.option(awkwardText, { nil: null })
    )
  )

  it.prop("a page of responses, from stored renderings and from answer rows", [listedCase], ([[rows, answers, cursor]]) => {
    const expected = JSON.stringify(Schema.encodeSync(ResponsePage)({ data: assemble(rows, answers), nextCursor: cursor }))
    // The stored rendering of each response's answers, as AnswerDocumentRepo writes it.
    const byResponse = answersByResponse(answers)
    const listed = rows.map((row) =>
      valueRow(ListedColumns, {
        ...row,
        answersJson: answersJson(byResponse.get(row.id) ?? [], (a) => parseStoredValues(a.questionId, a.values))
      })
    )
    expect(pageJson(renderedItems(listed, listed.length) ?? "", cursor)).toBe(expected)
    expect(pageJson(assembleJson(rows, answers).join(","), cursor)).toBe(expected)
    // A rendering that is not current sends the page to the answer rows.
    const stale = listed.map((row, i) => (i === listed.length - 1 ? [...row.slice(0, -1), null] : row))
    expect(renderedItems(stale, stale.length)).toBeUndefined()
  })
})
