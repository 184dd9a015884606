import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, FastCheck as fc, Schema } from "effect"
import { Analytics } from "../src/Domain/Analytics.js"
import { QuestionList } from "../src/Domain/Question.js"
import { SurveyResponse } from "../src/Domain/Response.js"
import { Survey } from "../src/Domain/Survey.js"
import { ResponsePage } from "../src/Responses/Api.js"
import { assemble, assembleJson } from "../src/Responses/ResponseRepo.js"
import { SurveyPage } from "../src/Surveys/Api.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { bodyOf, get, TestServer } from "./support/TestServer.js"

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
    ["/api/v1/surveys/srv_main/responses?limit=1&status=completed", ResponsePage]
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
      const res = yield* get("/api/v1/surveys/srv_main/questions", TOKENS.editor)
      const list = Schema.decodeUnknownSync(QuestionList)(res.body)
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
        id,
        surveyId: "srv_x",
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

