import { expect } from "@effect/vitest"
import { Schema } from "effect"
import { type Aggregates, isNonEmpty, numberOf, type QuestionDef, type ResponseInput } from "../../src/Analytics/Compute.js"

/** The figures of decisions §5 straight from their definitions, for comparison. */
export const oracle = (questions: ReadonlyArray<QuestionDef>, responses: ReadonlyArray<ResponseInput>) => {
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
    }),
    // Computed from the responses themselves: exact for the questions given.
    stale: false
  }
}

const decodeFields = Schema.decodeUnknownSync(Schema.Record({ key: Schema.String, value: Schema.Unknown }))

/** Deep equality where numbers may differ by floating-point rounding of stored sums. */
export const expectClose = (actual: unknown, expected: unknown, path = "$"): void => {
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
    const fields = decodeFields(expected)
    for (const [key, value] of Object.entries(actual)) {
      expectClose(value, fields[key], `${path}.${key}`)
    }
    return
  }
  expect(actual, path).toEqual(expected)
}


/** Stored counters as sorted plain data, for `expectClose`: every row, zero counts included. */
export const plainAggregates = (agg: Aggregates) => ({
  responseCount: agg.responseCount,
  completedCount: agg.completedCount,
  reach: [...agg.reach].sort((a, b) => a[0] - b[0]),
  questions: [...agg.questions].sort((a, b) => (a[0] < b[0] ? -1 : 1)),
  options: [...agg.options].flatMap(([q, m]) => [...m].map(([v, o]) => [q, v, o.count, o.rankSum] as const)).sort(),
  numbers: [...agg.numbers].flatMap(([q, m]) => [...m].map(([n, c]) => `${q}:${n}:${c}`)).sort()
})
