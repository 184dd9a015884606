/**
 * Measured shortcut: `analyticsOf` builds the answer in its wire form, sent pre-encoded, skipping
 * the Schema encoding of the declared success; the bytes equal that encoding
 * (test/WireEncoding.test.ts). Measurement: docs/performance.md#measured-shortcuts, "Pre-encoded
 * bodies".
 */
import { Schema } from "effect"
import type { Analytics, NumericSummary } from "../Domain/Analytics.js"
import { StoredQuestionType } from "../Domain/Question.js"
import { medianOf } from "./Median.js"

/**
 * The analytics arithmetic of decisions §5, free of I/O: what one response contributes to the
 * stored counters, how contributions add up (and subtract, for a changed response), and how the
 * counters turn into the API's figures. The aggregator, the rebuild and the tests share it.
 */

export interface QuestionDef {
  readonly id: string
  readonly type: StoredQuestionType
  readonly position: number
  readonly deleted: boolean
  readonly options: ReadonlyArray<{ readonly value: string; readonly label: string }>
}

export interface ResponseInput {
  readonly completed: boolean
  readonly answers: ReadonlyArray<{ readonly questionId: string; readonly values: ReadonlyArray<string> }>
}

/** What a response adds to the counters; stored per response so that a change can subtract it exactly. */
export const Contribution = Schema.Struct({
  /** completed */
  c: Schema.Literal(0, 1),
  /** furthest position answered among current questions, or null */
  r: Schema.NullOr(Schema.Number),
  /** counted answers: question id, its type when counted, values */
  a: Schema.Array(Schema.Tuple(Schema.String, StoredQuestionType, Schema.Array(Schema.String)))
})
export type Contribution = typeof Contribution.Type
export const ContributionJson = Schema.parseJson(Contribution)

export interface QuestionCounters {
  answered: number
  textCount: number
  numericCount: number
  numericSum: number
  numericSumSquares: number
}

export interface OptionCounters {
  count: number
  rankSum: number
}

/** The stored counters of one survey. */
export interface Aggregates {
  responseCount: number
  completedCount: number
  /** incomplete responses by the furthest position they answered */
  readonly reach: Map<number, number>
  readonly questions: Map<string, QuestionCounters>
  readonly options: Map<string, Map<string, OptionCounters>>
  readonly numbers: Map<string, Map<number, number>>
}

export const emptyAggregates = (): Aggregates => ({
  responseCount: 0,
  completedCount: 0,
  reach: new Map(),
  questions: new Map(),
  options: new Map(),
  numbers: new Map()
})

const hasOptions = (type: StoredQuestionType) => type === "checkbox" || type === "scale" || type === "sort"
const isNumeric = (type: StoredQuestionType) => type === "number" || type === "scale"
const isText = (type: StoredQuestionType) => type === "textarea" || type === "email"

/** A countable answer: at least one non-empty value. */
export const isNonEmpty = (values: ReadonlyArray<string>) => values.some((v) => v.length > 0)

const decimal = /^\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*$/

/** The number an answer holds, if it holds one; -0 folds into 0 so that equal numbers share a key. */
export const numberOf = (value: string | undefined): number | undefined => {
  if (value === undefined || !decimal.test(value)) return undefined
  const n = Number(value)
  return Number.isFinite(n) ? (n === 0 ? 0 : n) : undefined
}

/** Question layout the counters depend on: ids, types, positions, deletions. */
export const signatureOf = (questions: ReadonlyArray<QuestionDef>): string =>
  questions
    .map((q) => `${q.id}:${q.type}:${q.position}:${q.deleted ? 1 : 0}`)
    .sort()
    .join(",")

/** Answers to deleted questions, to sections, or to no question of the survey are ignored. */
export const contributionOf = (
  questions: ReadonlyMap<string, QuestionDef>,
  response: ResponseInput
): Contribution => {
  const counted: Array<readonly [string, StoredQuestionType, ReadonlyArray<string>]> = []
  let reach: number | null = null
  for (const answer of response.answers) {
    const question = questions.get(answer.questionId)
    if (question === undefined || question.deleted || question.type === "section" || !isNonEmpty(answer.values)) {
      continue
    }
    counted.push([question.id, question.type, answer.values])
    if (reach === null || question.position > reach) reach = question.position
  }
  counted.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
  return { c: response.completed ? 1 : 0, r: reach, a: counted }
}

const bump = <K>(map: Map<K, number>, key: K, by: number) => map.set(key, (map.get(key) ?? 0) + by)

const questionCounters = (agg: Aggregates, id: string): QuestionCounters => {
  let counters = agg.questions.get(id)
  if (counters === undefined) {
    counters = { answered: 0, textCount: 0, numericCount: 0, numericSum: 0, numericSumSquares: 0 }
    agg.questions.set(id, counters)
  }
  return counters
}

/** Adds (sign 1) or removes (sign -1) one response's contribution. */
export const apply = (agg: Aggregates, contribution: Contribution, sign: 1 | -1): void => {
  agg.responseCount += sign
  agg.completedCount += sign * contribution.c
  if (contribution.c === 0 && contribution.r !== null) bump(agg.reach, contribution.r, sign)
  for (const [id, type, values] of contribution.a) {
    const counters = questionCounters(agg, id)
    counters.answered += sign
    if (isText(type)) counters.textCount += sign
    if (hasOptions(type)) {
      let options = agg.options.get(id)
      if (options === undefined) {
        options = new Map()
        agg.options.set(id, options)
      }
      const seen = new Set<string>()
      values.forEach((value, index) => {
        if (seen.has(value)) return
        seen.add(value)
        const option = options.get(value) ?? { count: 0, rankSum: 0 }
        option.count += sign
        if (type === "sort") option.rankSum += sign * (index + 1)
        options.set(value, option)
      })
    }
    if (isNumeric(type)) {
      const n = numberOf(values[0])
      if (n !== undefined) {
        counters.numericCount += sign
        counters.numericSum += sign * n
        counters.numericSumSquares += sign * n * n
        let numbers = agg.numbers.get(id)
        if (numbers === undefined) {
          numbers = new Map()
          agg.numbers.set(id, numbers)
        }
        bump(numbers, n, sign)
      }
    }
  }
}

/** The counters of a set of responses, computed from scratch. */
export const aggregate = (questions: ReadonlyArray<QuestionDef>, responses: Iterable<ResponseInput>): Aggregates => {
  const byId = new Map(questions.map((q) => [q.id, q]))
  const agg = emptyAggregates()
  for (const response of responses) apply(agg, contributionOf(byId, response), 1)
  return agg
}

const numericOf = (counters: QuestionCounters | undefined, numbers: ReadonlyMap<number, number> | undefined) => {
  const count = counters?.numericCount ?? 0
  const sum = counters?.numericSum ?? 0
  const sumSquares = counters?.numericSumSquares ?? 0
  const sorted = [...(numbers ?? new Map<number, number>())].filter(([, c]) => c > 0).sort((a, b) => a[0] - b[0])
  const variance = count >= 2 ? Math.max(0, (sumSquares - (sum * sum) / count) / (count - 1)) : null
  return {
    count,
    mean: count > 0 ? sum / count : 0,
    median: medianOf(sorted, count),
    min: count > 0 ? sorted[0]?.[0] ?? null : null,
    max: count > 0 ? sorted[sorted.length - 1]?.[0] ?? null : null,
    standardDeviation: variance === null ? null : Math.sqrt(variance)
  } satisfies typeof NumericSummary.Encoded
}

/**
 * The API figures from a survey's counters and its current questions (sections and deleted
 * questions never appear), in the wire form of `Analytics` (fields in its order), so that the
 * answer needs no re-encoding (Http/PreEncoded). Work is proportional to questions, options and
 * distinct numbers.
 */
export const analyticsOf = (
  questions: ReadonlyArray<QuestionDef>,
  agg: Aggregates,
  stale = false
): typeof Analytics.Encoded => {
  const shown = questions
    .filter((q) => !q.deleted && q.type !== "section")
    .sort((a, b) => a.position - b.position || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  const reachAtOrAfter = (position: number) => {
    let reached = agg.completedCount
    for (const [at, count] of agg.reach) if (at >= position) reached += count
    return reached
  }
  return {
    responseCount: agg.responseCount,
    completedCount: agg.completedCount,
    incompleteCount: agg.responseCount - agg.completedCount,
    completionRate: agg.responseCount > 0 ? agg.completedCount / agg.responseCount : null,
    questions: shown.map((q) => {
      const counters = agg.questions.get(q.id)
      const answered = counters?.answered ?? 0
      const options = agg.options.get(q.id)
      const optionCount = (value: string) => options?.get(value) ?? { count: 0, rankSum: 0 }
      return {
        id: q.id,
        respondentCount: answered,
        skippedCount: Math.max(0, reachAtOrAfter(q.position) - answered),
        textAnswerCount: counters?.textCount ?? 0,
        options: hasOptions(q.type)
          ? q.options.map((o) => ({ value: o.value, label: o.label, count: optionCount(o.value).count }))
          : [],
        numeric: isNumeric(q.type) ? numericOf(counters, agg.numbers.get(q.id)) : null,
        ranking: q.type === "sort"
          ? q.options.map((o) => {
            const { count, rankSum } = optionCount(o.value)
            return { value: o.value, label: o.label, count, averageRank: count > 0 ? rankSum / count : null }
          })
          : null
      }
    }),
    stale
  }
}
