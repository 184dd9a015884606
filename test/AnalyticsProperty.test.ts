import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, FastCheck as fc, Layer } from "effect"
import { AggregateRepo } from "../src/Analytics/AggregateRepo.js"
import { Aggregator } from "../src/Analytics/Aggregator.js"
import {
  type Aggregates,
  aggregate,
  analyticsOf,
  isNonEmpty,
  numberOf,
  type QuestionDef,
  type ResponseInput
} from "../src/Analytics/Compute.js"
import type { Analytics } from "../src/Domain/Analytics.js"
import type { StoredQuestionType } from "../src/Domain/Question.js"
import { writeResponse } from "./support/AnalyticsWrites.js"
import { TestDatabase } from "./support/TestServer.js"

const types: ReadonlyArray<StoredQuestionType> = [
  "textarea",
  "email",
  "checkbox",
  "number",
  "calendar",
  "country",
  "heatmap",
  "scale",
  "sort",
  "section"
]

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
        { weight: 1, arbitrary: fc.constant({ kind: "aggregate" as const }) }
      ),
      { maxLength: 25 }
    )
  })
)

/** The figures of decisions §5 straight from their definitions, for comparison. */
const oracle = (questions: ReadonlyArray<QuestionDef>, responses: ReadonlyArray<ResponseInput>) => {
  const shown = questions.filter((q) => !q.deleted && q.type !== "section")
    .sort((a, b) => a.position - b.position || (a.id < b.id ? -1 : 1))
  const answerTo = (r: ResponseInput, q: QuestionDef) => {
    const a = r.answers.find((x) => x.questionId === q.id)
    return a !== undefined && isNonEmpty(a.values) ? a.values : undefined
  }
  const completed = responses.filter((r) => r.completed).length
  return {
    responseCount: responses.length,
    completedCount: completed,
    incompleteCount: responses.length - completed,
    completionRate: responses.length === 0 ? null : completed / responses.length,
    questions: shown.map((q) => {
      const reached = responses.filter((r) =>
        r.completed || shown.some((other) => other.position >= q.position && answerTo(r, other) !== undefined)
      )
      const answers = responses.flatMap((r) => {
        const values = answerTo(r, q)
        return values === undefined ? [] : [values]
      })
      const nums = answers.flatMap((v) => {
        const n = numberOf(v[0])
        return n === undefined ? [] : [n]
      }).sort((a, b) => a - b)
      const mean = nums.length === 0 ? 0 : nums.reduce((s, n) => s + n, 0) / nums.length
      const mid = Math.floor(nums.length / 2)
      const withOptions = q.type === "checkbox" || q.type === "scale" || q.type === "sort"
      return {
        id: q.id,
        respondentCount: answers.length,
        skippedCount: reached.filter((r) => answerTo(r, q) === undefined).length,
        textAnswerCount: q.type === "textarea" || q.type === "email" ? answers.length : 0,
        options: withOptions
          ? q.options.map((o) => ({ ...o, count: answers.filter((v) => v.includes(o.value)).length }))
          : [],
        numeric: q.type === "number" || q.type === "scale"
          ? {
            count: nums.length,
            mean,
            median: nums.length === 0 ? null : nums.length % 2 === 1 ? nums[mid] : ((nums[mid - 1] ?? 0) + (nums[mid] ?? 0)) / 2,
            min: nums[0] ?? null,
            max: nums[nums.length - 1] ?? null,
            standardDeviation: nums.length < 2
              ? null
              : Math.sqrt(nums.reduce((s, n) => s + (n - mean) ** 2, 0) / (nums.length - 1))
          }
          : null,
        ranking: q.type === "sort"
          ? q.options.map((o) => {
            const ranks = answers.flatMap((v) => (v.includes(o.value) ? [v.indexOf(o.value) + 1] : []))
            return {
              ...o,
              count: ranks.length,
              averageRank: ranks.length === 0 ? null : ranks.reduce((s, n) => s + n, 0) / ranks.length
            }
          })
          : null
      }
    })
  }
}

/** Deep equality where numbers may differ by floating-point rounding of stored sums. */
const expectClose = (actual: unknown, expected: unknown, path = "$"): void => {
  if (typeof actual === "number" && typeof expected === "number") {
    const tolerance = 1e-4 + 1e-9 * Math.max(Math.abs(actual), Math.abs(expected))
    if (Math.abs(actual - expected) > tolerance) expect.fail(`${path}: ${actual} != ${expected}`)
    return
  }
  if (Array.isArray(actual) && Array.isArray(expected)) {
    expect(actual.length, path).toBe(expected.length)
    actual.forEach((a, i) => expectClose(a, expected[i], `${path}[${i}]`))
    return
  }
  if (typeof actual === "object" && actual !== null && typeof expected === "object" && expected !== null) {
    expect(Object.keys(actual).sort(), path).toEqual(Object.keys(expected).sort())
    for (const [key, value] of Object.entries(actual)) {
      expectClose(value, (expected as Record<string, unknown>)[key], `${path}.${key}`)
    }
    return
  }
  expect(actual, path).toEqual(expected)
}

const plain = (agg: Aggregates) => ({
  responseCount: agg.responseCount,
  completedCount: agg.completedCount,
  reach: [...agg.reach].sort((a, b) => a[0] - b[0]),
  questions: [...agg.questions].sort((a, b) => (a[0] < b[0] ? -1 : 1)),
  options: [...agg.options].flatMap(([q, m]) => [...m].map(([v, o]) => [q, v, o.count, o.rankSum] as const)).sort(),
  numbers: [...agg.numbers].flatMap(([q, m]) => [...m].map(([n, c]) => `${q}:${n}:${c}`)).sort()
})

const toPlainAnalytics = (a: Analytics): unknown => JSON.parse(JSON.stringify(a))

const Setup = Layer.mergeAll(Aggregator.Default, AggregateRepo.Default).pipe(
  Layer.provideMerge(TestDatabase({
    accounts: [{ id: "acc_p", planId: "pro" }],
    workspaces: [{ id: "ws_p", ownerAccountId: "acc_p" }]
  }))
)

let run = 0

layer(Setup)("stored aggregates", (it) => {
  it.effect.prop(
    "equal a from-scratch computation after any sequence of writes, field by field",
    { scenario: scenarioArb },
    ({ scenario }) =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const aggregator = yield* Aggregator
        const repo = yield* AggregateRepo
        const surveyId = `srv_p${run++}`
        yield* sql`INSERT INTO surveys (id, workspace_id, title, status, created_at, updated_at)
          VALUES (${surveyId}, 'ws_p', 'P', 'published', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')`
        for (const q of scenario.questions) {
          yield* sql`INSERT INTO questions (id, survey_id, type, label, position, options, deleted) VALUES
            (${`${surveyId}_${q.id}`}, ${surveyId}, ${q.type}, ${q.id}, ${q.position}, ${JSON.stringify(q.options)},
             ${q.deleted ? 1 : 0})`
        }
        const questions = scenario.questions.map((q) => ({ ...q, id: `${surveyId}_${q.id}` }))
        const types = new Map(questions.map((q) => [q.id, q.type]))
        const model = new Map<number, ResponseInput>()
        for (const op of scenario.ops) {
          if (op.kind === "aggregate") {
            yield* aggregator.catchUp()
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
        yield* aggregator.catchUp()

        const responses = [...model.values()]
        const stored = yield* repo.load(surveyId)
        expectClose(plain(stored.aggregates), plain(aggregate(questions, responses)))
        expectClose(toPlainAnalytics(analyticsOf(questions, stored.aggregates)), oracle(questions, responses))

        yield* aggregator.rebuild(surveyId)
        expectClose(plain((yield* repo.load(surveyId)).aggregates), plain(aggregate(questions, responses)))
      }).pipe(Effect.orDie),
    { fastCheck: { numRuns: 80 } }
  )
})
