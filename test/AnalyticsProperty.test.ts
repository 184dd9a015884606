import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, FastCheck as fc, Schema } from "effect"
import { AggregateRepo } from "../src/Analytics/AggregateRepo.js"
import { Aggregator } from "../src/Analytics/Aggregator.js"
import { aggregate, analyticsOf, type QuestionDef, type ResponseInput } from "../src/Analytics/Compute.js"
import type { Analytics } from "../src/Domain/Analytics.js"
import { StoredQuestionType } from "../src/Domain/Question.js"
import { ResponseDeletion } from "../src/Responses/ResponseDeletion.js"
import { expectClose, oracle, plainAggregates } from "./support/AnalyticsOracle.js"
import { writeResponse } from "./support/AnalyticsWrites.js"
import { decodeAs, TestDatabase } from "./support/TestServer.js"
import { Count } from "./support/StoredRows.js"
import { ResponseId, SurveyId, WorkspaceId } from "../src/Domain/Ids.js"

const types: ReadonlyArray<StoredQuestionType> = StoredQuestionType.literals

const questionsArb = fc.array(
  fc.record({
    type: fc.constantFrom(...types),
    position: fc.integer({ min: 1, max: 6 }),
    deleted: fc.boolean(),
    optionCount: fc.integer({ min: 1, max: 4 })
  }),
  { minLength: 1, maxLength: 7 }
).map((specs) =>
  specs.map((s, i): QuestionDef => ({
    id: `q${i}`,
    type: s.type,
    position: s.position,
    deleted: s.deleted,
    options: s.type === "checkbox" || s.type === "sort" || s.type === "scale"
      ? Array.from({ length: s.optionCount }, (_, k) =>
        s.type === "scale" ? { value: String(k + 1), label: `${k + 1} points` } : { value: `o${k}`, label: `O${k}` })
      : []
  }))
)

const numberText = fc.oneof(
  fc.integer({ min: -50, max: 50 }).map(String),
  fc.integer({ min: -100000, max: 100000 }).map((n) => String(n / 100)),
  fc.constantFrom("abc", "", "1e3")
)

const valuesArb = (q: QuestionDef): fc.Arbitrary<ReadonlyArray<string>> => {
  const values = q.options.map((o) => o.value)
  switch (q.type) {
    case "checkbox":
      return fc.subarray(values)
    case "sort":
      return fc.shuffledSubarray(values)
    case "scale":
      return fc.oneof(fc.constantFrom(...values).map((v) => [v]), fc.constant([]))
    case "number":
      return numberText.map((v) => [v])
    default:
      return fc.oneof(fc.string({ maxLength: 6 }).map((v) => [v]), fc.constant([]))
  }
}

const answersArb = (questions: ReadonlyArray<QuestionDef>) =>
  fc.tuple(
    ...questions.map((q) => fc.option(valuesArb(q).map((values) => ({ questionId: q.id, values })), { nil: undefined })),
    fc.option(fc.constant({ questionId: "q_unknown", values: ["x"] }), { nil: undefined })
  ).map((all) => all.filter((a) => a !== undefined))

const scenarioArb = questionsArb.chain((questions) =>
  fc.record({
    questions: fc.constant(questions),
    ops: fc.array(
      fc.oneof(
        { weight: 5, arbitrary: fc.record({
          kind: fc.constant("write" as const),
          target: fc.integer({ min: 0, max: 7 }),
          completed: fc.boolean(),
          answers: answersArb(questions)
        }) },
        { weight: 1, arbitrary: fc.constant({ kind: "aggregate" as const }) },
        { weight: 2, arbitrary: fc.record({ kind: fc.constant("delete" as const), target: fc.integer({ min: 0, max: 7 }) }) }
      ),
      { maxLength: 25 }
    )
  })
)

const toPlainAnalytics = (a: typeof Analytics.Encoded): unknown => JSON.parse(JSON.stringify(a))

const Setup = TestDatabase({
  accounts: [{ id: "acc_p", planId: "pro" }],
  workspaces: [{ id: "ws_p", ownerAccountId: "acc_p" }]
})

let run = 0

layer(Setup)("stored aggregates", (it) => {
  it.effect.prop(
    "equal a from-scratch computation after any sequence of writes and deletions, field by field, in every survey a step touches",
    { scenario: scenarioArb },
    ({ scenario }) =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const aggregator = yield* Aggregator
        const repo = yield* AggregateRepo
        const deletion = yield* ResponseDeletion
        // Two surveys take the same writes in turn, so that each step of the aggregator applies
        // changes of both together.
        const base = `srv_p${run++}`
        const surveys = [`${base}_a`, `${base}_b`].map((id) => SurveyId.make(id))
        const setups = []
        for (const surveyId of surveys) {
          yield* sql`INSERT INTO surveys (id, workspace_id, title, status, created_at, updated_at)
            VALUES (${surveyId}, 'ws_p', 'P', 'published', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')`
          for (const q of scenario.questions) {
            yield* sql`INSERT INTO questions (id, survey_id, type, label, position, options, deleted) VALUES
              (${`${surveyId}_${q.id}`}, ${surveyId}, ${q.type}, ${q.id}, ${q.position}, ${JSON.stringify(q.options)},
               ${q.deleted ? 1 : 0})`
          }
          const questions = scenario.questions.map((q) => ({ ...q, id: `${surveyId}_${q.id}` }))
          setups.push({ surveyId, questions, types: new Map(questions.map((q) => [q.id, q.type])), model: new Map<number, ResponseInput>() })
        }
        for (const op of scenario.ops) {
          if (op.kind === "aggregate") {
            yield* aggregator.catchUp()
            continue
          }
          for (const { model, surveyId, types } of setups) {
            if (op.kind === "delete") {
              // Subtracts what the response contributed, in the deleting transaction.
              const existed = yield* deletion.deleteOne({
                workspaceId: WorkspaceId.make("ws_p"),
                surveyId,
                responseId: ResponseId.make(`${surveyId}_r${op.target}`)
              })
              expect(existed).toBe(model.delete(op.target))
              continue
            }
            const answers = op.answers.map((a) => ({ ...a, questionId: `${surveyId}_${a.questionId}` }))
            model.set(op.target, { completed: op.completed, answers })
            yield* writeResponse({
              id: `${surveyId}_r${op.target}`,
              surveyId,
              completed: op.completed,
              createdAt: `2026-01-02T00:0${op.target}:00.000Z`,
              answers,
              types
            })
          }
        }
        yield* aggregator.catchUp()
        for (const { model, questions, surveyId } of setups) {
          // Consumed changes are dropped with the step that applied them.
          const left = decodeAs(
            Schema.Array(Count),
            yield* sql`SELECT count(*) AS n FROM response_changes WHERE survey_id = ${surveyId}`
          )
          expect(left[0]?.n).toBe(0)

          const responses = [...model.values()]
          const stored = yield* repo.load(surveyId)
          expectClose(plainAggregates(stored.aggregates), plainAggregates(aggregate(questions, responses)))
          expectClose(toPlainAnalytics(analyticsOf(questions, stored.aggregates)), oracle(questions, responses))

          yield* aggregator.rebuild(surveyId)
          expectClose(plainAggregates((yield* repo.load(surveyId)).aggregates), plainAggregates(aggregate(questions, responses)))
        }
      }).pipe(Effect.orDie),
    { fastCheck: { numRuns: 80 } }
  )
})
