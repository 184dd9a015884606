/**
 * Measured shortcut: a survey's analytics are read in one statement on the `Reader`
 * (`analyticsSnapshotSql`) as typed value rows, skipping a statement per kind of counter and a
 * Schema decode per row. One statement reads one generation of the counters, and each cell is read
 * by the name the statement declares for it (test/TypedReads.test.ts). Measurement:
 * docs/performance.md#measured-shortcuts, "Analytics in one statement" and "Row readers compiled
 * once".
 */
import { SqlClient } from "@effect/sql"
import { Array as Arr, Effect, Schema } from "effect"
import { parseStoredOptions, StoredQuestionType } from "../Domain/Question.js"
import { Reader } from "../Sql/Reader.js"
import {
  analyticsSnapshotSql,
  numbersBranch,
  optionsBranch,
  questionCountersBranch,
  questionsBranch,
  reachBranch,
  rebuildBranch,
  storedCountersSql,
  surveyBranch
} from "./SnapshotSql.js"
import { column, named, num, oneOf, rowShape, type Row, text } from "../Sql/Rows.js"
import {
  type Aggregates,
  type Contribution,
  ContributionJson,
  emptyAggregates,
  type QuestionDef,
  type ResponseInput
} from "./Compute.js"
import { SqlDialect, upToSeq } from "../Sql/Dialect.js"
import { type ResponseId, responseId as brandResponseId, type SurveyId, surveyId as brandSurveyId } from "../Domain/Ids.js"

const chunk = 500

/** The tables of a survey's counters, each keyed by `survey_id` first. */
const counterTables = ["analytics_surveys", "analytics_reach", "analytics_questions", "analytics_options", "analytics_numbers"] as const

const surveyIdColumn = (select: string) => column.map(column.text(select), brandSurveyId)
const responseIdColumn = (select: string) => column.map(column.text(select), brandResponseId)

/** A question as analytics reads it, with its survey; read from `questions q`. */
const QuestionColumns = rowShape({
  id: column.text("q.id"),
  surveyId: surveyIdColumn("q.survey_id"),
  type: column.oneOf("q.type", StoredQuestionType.literals),
  position: column.num("q.position"),
  deleted: column.flag("q.deleted"),
  options: column.map(column.text("q.options"), parseStoredOptions)
})

const toDef = ({ surveyId: _, ...question }: ReturnType<typeof QuestionColumns.read>): QuestionDef => question

const decodeContribution = Schema.decodeSync(ContributionJson)
const ContributionColumns = rowShape({
  responseId: responseIdColumn("response_id"),
  surveyId: surveyIdColumn("survey_id"),
  contribution: column.map(column.text("contribution"), decodeContribution),
  generation: column.num("generation")
})
const ChangeColumns = rowShape({
  seq: column.num("seq"),
  responseId: responseIdColumn("response_id"),
  surveyId: surveyIdColumn("survey_id")
})
const SurveySignatureColumns = rowShape({ surveyId: surveyIdColumn("survey_id"), signature: column.text("signature") })
const SurveyIdColumns = rowShape({ id: surveyIdColumn("id") })

/** A stored answer's values: a JSON array of strings; anything else counts as no answer. */
const parseValues = (text: unknown): ReadonlyArray<string> => {
  if (typeof text !== "string") return []
  const parsed: unknown = JSON.parse(text)
  return Array.isArray(parsed) && parsed.every((v): v is string => typeof v === "string") ? parsed : []
}

/** An answer as analytics reads it: its values only, the survey's questions are read apart. */
const AnswerValuesColumns = rowShape({
  responseId: responseIdColumn("response_id"),
  questionId: column.text("question_id"),
  values: column.map(column.nullableText("\"values\""), parseValues)
})

const responseFields = {
  id: responseIdColumn("id"),
  surveyId: surveyIdColumn("survey_id"),
  completed: column.flag("completed")
}
const ResponseColumns = rowShape(responseFields)
/** A response row of a rebuild's keyset page, with the key it is ordered by. */
const PagedResponseColumns = rowShape({ ...responseFields, createdAt: column.text("created_at") })

const PositionColumns = rowShape({ seq: column.num("seq") })
/** The newest change, NULL while the log is empty. */
const LatestChangeColumns = rowShape({ seq: column.nullableNum("MAX(seq) AS seq") })
/** The newest change and the aggregator's position, each NULL when absent, and whether a survey is being rebuilt. */
const LagColumns = rowShape({
  latest: column.nullableNum("(SELECT MAX(seq) FROM response_changes) AS latest"),
  position: column.nullableNum("(SELECT seq FROM analytics_position WHERE id = 1) AS position"),
  rebuilding: column.nullableNum("(SELECT 1 FROM analytics_rebuilds WHERE active = 1 LIMIT 1) AS rebuilding")
})

export interface CurrentResponse extends ResponseInput {
  readonly id: ResponseId
  readonly surveyId: SurveyId
}

/** Where a rebuild's keyset walk over a survey's responses stands. */
export interface PagePosition {
  readonly createdAt: string
  readonly id: ResponseId
}

export interface StoredContribution {
  readonly responseId: ResponseId
  readonly surveyId: SurveyId
  readonly contribution: Contribution
  /** The generation of the counters it is counted in (src/Analytics/RebuildRepo.ts). */
  readonly generation: number
}

// Each branch's cells, read by the names SnapshotSql builds its statement from.
const surveyCells = {
  signature: named(surveyBranch.columns, "signature", text),
  responseCount: named(surveyBranch.columns, "response_count", num),
  completedCount: named(surveyBranch.columns, "completed_count", num)
}
const reachCells = {
  position: named(reachBranch.columns, "position", num),
  count: named(reachBranch.columns, "count", num)
}
const questionCounterCells = {
  questionId: named(questionCountersBranch.columns, "question_id", text),
  answered: named(questionCountersBranch.columns, "answered", num),
  textCount: named(questionCountersBranch.columns, "text_count", num),
  numericCount: named(questionCountersBranch.columns, "numeric_count", num),
  numericSum: named(questionCountersBranch.columns, "numeric_sum", num),
  numericSumSquares: named(questionCountersBranch.columns, "numeric_sum_squares", num)
}
const optionCells = {
  questionId: named(optionsBranch.columns, "question_id", text),
  value: named(optionsBranch.columns, "value", text),
  count: named(optionsBranch.columns, "count", num),
  rankSum: named(optionsBranch.columns, "rank_sum", num)
}
const numberCells = {
  questionId: named(numbersBranch.columns, "question_id", text),
  num: named(numbersBranch.columns, "num", num),
  count: named(numbersBranch.columns, "count", num)
}
const questionCells = {
  id: named(questionsBranch.columns, "id", text),
  type: named(questionsBranch.columns, "type", (row, index, name) => oneOf(row, index, name, StoredQuestionType.literals)),
  position: named(questionsBranch.columns, "position", num),
  deleted: named(questionsBranch.columns, "deleted", num),
  options: named(questionsBranch.columns, "options", text)
}
const rebuildCells = { active: named(rebuildBranch.columns, "active", num) }
const kindOf = named(surveyBranch.columns, "kind", num)

/** Reads the rows of `storedCountersSql` or `analyticsSnapshotSql`. */
const foldCounters = (rows: ReadonlyArray<Row>) => {
  const agg = emptyAggregates()
  const questions: Array<QuestionDef> = []
  let signature: string | null = null
  let rebuilding = false
  for (const row of rows) {
    switch (kindOf(row)) {
      case surveyBranch.kind:
        agg.responseCount = surveyCells.responseCount(row)
        agg.completedCount = surveyCells.completedCount(row)
        signature = surveyCells.signature(row)
        break
      case reachBranch.kind:
        agg.reach.set(reachCells.position(row), reachCells.count(row))
        break
      case questionCountersBranch.kind:
        agg.questions.set(questionCounterCells.questionId(row), {
          answered: questionCounterCells.answered(row),
          textCount: questionCounterCells.textCount(row),
          numericCount: questionCounterCells.numericCount(row),
          numericSum: questionCounterCells.numericSum(row),
          numericSumSquares: questionCounterCells.numericSumSquares(row)
        })
        break
      case optionsBranch.kind: {
        const questionId = optionCells.questionId(row)
        const map = agg.options.get(questionId) ?? new Map<string, { count: number; rankSum: number }>()
        map.set(optionCells.value(row), { count: optionCells.count(row), rankSum: optionCells.rankSum(row) })
        agg.options.set(questionId, map)
        break
      }
      case numbersBranch.kind: {
        const questionId = numberCells.questionId(row)
        const map = agg.numbers.get(questionId) ?? new Map<number, number>()
        map.set(numberCells.num(row), numberCells.count(row))
        agg.numbers.set(questionId, map)
        break
      }
      case questionsBranch.kind:
        questions.push({
          id: questionCells.id(row),
          type: questionCells.type(row),
          position: questionCells.position(row),
          deleted: questionCells.deleted(row) !== 0,
          options: parseStoredOptions(questionCells.options(row))
        })
        break
      case rebuildBranch.kind:
        rebuilding = rebuildCells.active(row) !== 0
        break
      default:
        throw new TypeError(`Column kind: expected one of the snapshot's branches, got ${kindOf(row)}`)
    }
  }
  return { questions, rebuilding, stored: { aggregates: agg, signature } }
}

/** Reads and writes the stored aggregates, the per-response contributions and the change position. */
export class AggregateRepo extends Effect.Service<AggregateRepo>()("Analytics/AggregateRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const dialect = yield* SqlDialect
    const reader = yield* Reader

    /** Every question of these surveys, deleted ones and sections included, by survey. */
    const questionsOfSurveys = (surveyIds: ReadonlyArray<SurveyId>) =>
      Effect.gen(function*() {
        const bySurvey = new Map<SurveyId, Array<QuestionDef>>(surveyIds.map((id) => [id, []]))
        for (const part of Arr.chunksOf(Arr.dedupe(surveyIds), chunk)) {
          const rows = yield* sql`SELECT ${sql.literal(QuestionColumns.columns)} FROM questions q
            WHERE q.survey_id IN ${sql.in(part)}`.values
          for (const row of rows.map(QuestionColumns.read)) bySurvey.get(row.surveyId)?.push(toDef(row))
        }
        return bySurvey
      })

    /** Every question of a survey, deleted ones and sections included. */
    const questionsOf = (surveyId: SurveyId) =>
      Effect.map(questionsOfSurveys([surveyId]), (bySurvey) => bySurvey.get(surveyId) ?? [])

    /**
     * Question layouts of every survey that has stored aggregates and no rebuild under way (the
     * counters a rebuild builds, kept under a key of their own, are not a survey's).
     */
    const storedLayouts = Effect.gen(function*() {
      const signatures = (yield* sql`SELECT ${sql.literal(SurveySignatureColumns.columns)} FROM analytics_surveys
        WHERE survey_id IN (SELECT id FROM surveys)
          AND survey_id NOT IN (SELECT survey_id FROM analytics_rebuilds WHERE active = 1)`.values)
        .map(SurveySignatureColumns.read)
      const rows = (yield* sql`SELECT ${sql.literal(QuestionColumns.columns)}
        FROM questions q JOIN analytics_surveys s ON s.survey_id = q.survey_id`.values).map(QuestionColumns.read)
      const questions = Arr.groupBy(rows, (row) => row.surveyId)
      return signatures.map((s) => ({
        surveyId: s.surveyId,
        signature: s.signature,
        questions: (questions[s.surveyId] ?? []).map(toDef)
      }))
    })

    /** The stored counters of one survey and the layout signature they were built against. */
    const load = (surveyId: SurveyId) =>
      Effect.map(sql.unsafe(dialect.positional(storedCountersSql), [surveyId]).values, (rows) => foldCounters(rows).stored)

    /**
     * Adds deltas to surveys' counters (creating their rows) and drops rows that fell to zero: a
     * statement per kind of counter for all the surveys together, so that a step's statements do
     * not grow with the number of surveys its changes touch.
     */
    const addDeltas = (deltas: ReadonlyArray<{ readonly surveyId: SurveyId; readonly delta: Aggregates; readonly signature: string }>) =>
      Effect.gen(function*() {
        const surveys = deltas.map(({ delta, signature, surveyId }) => ({
          surveyId,
          responseCount: delta.responseCount,
          completedCount: delta.completedCount,
          signature
        }))
        for (const rows of Arr.chunksOf(surveys, chunk)) {
          yield* sql`INSERT INTO analytics_surveys ${sql.insert(rows)}
            ON CONFLICT (survey_id) DO UPDATE SET response_count = analytics_surveys.response_count + excluded.response_count,
              completed_count = analytics_surveys.completed_count + excluded.completed_count, signature = excluded.signature`
        }
        const reach = deltas.flatMap(({ delta, surveyId }) =>
          [...delta.reach].filter(([, count]) => count !== 0).map(([position, count]) => ({ surveyId, position, count }))
        )
        for (const rows of Arr.chunksOf(reach, chunk)) {
          yield* sql`INSERT INTO analytics_reach ${sql.insert(rows)}
            ON CONFLICT (survey_id, position) DO UPDATE SET count = analytics_reach.count + excluded.count`
        }
        const questions = deltas.flatMap(({ delta, surveyId }) =>
          [...delta.questions].filter(([, q]) =>
            q.answered !== 0 || q.textCount !== 0 || q.numericCount !== 0 || q.numericSum !== 0 || q.numericSumSquares !== 0
          ).map(([questionId, q]) => ({ surveyId, questionId, ...q }))
        )
        for (const rows of Arr.chunksOf(questions, chunk)) {
          yield* sql`INSERT INTO analytics_questions ${sql.insert(rows)}
            ON CONFLICT (survey_id, question_id) DO UPDATE SET answered = analytics_questions.answered + excluded.answered,
              text_count = analytics_questions.text_count + excluded.text_count,
              numeric_count = analytics_questions.numeric_count + excluded.numeric_count,
              numeric_sum = analytics_questions.numeric_sum + excluded.numeric_sum,
              numeric_sum_squares = analytics_questions.numeric_sum_squares + excluded.numeric_sum_squares`
        }
        const options = deltas.flatMap(({ delta, surveyId }) =>
          [...delta.options].flatMap(([questionId, map]) =>
            [...map].filter(([, o]) => o.count !== 0 || o.rankSum !== 0)
              .map(([value, o]) => ({ surveyId, questionId, value, count: o.count, rankSum: o.rankSum }))
          )
        )
        for (const rows of Arr.chunksOf(options, chunk)) {
          yield* sql`INSERT INTO analytics_options ${sql.insert(rows)}
            ON CONFLICT (survey_id, question_id, value) DO UPDATE SET count = analytics_options.count + excluded.count,
              rank_sum = analytics_options.rank_sum + excluded.rank_sum`
        }
        const numbers = deltas.flatMap(({ delta, surveyId }) =>
          [...delta.numbers].flatMap(([questionId, map]) =>
            [...map].filter(([, count]) => count !== 0).map(([num, count]) => ({ surveyId, questionId, num, count }))
          )
        )
        for (const rows of Arr.chunksOf(numbers, chunk)) {
          yield* sql`INSERT INTO analytics_numbers ${sql.insert(rows)}
            ON CONFLICT (survey_id, question_id, num) DO UPDATE SET count = analytics_numbers.count + excluded.count`
        }
        // A question nobody answers any more starts again from exact zeros (no floating-point residue).
        const touched = (rows: ReadonlyArray<{ readonly surveyId: SurveyId }>) => Arr.chunksOf(Arr.dedupe(rows.map((row) => row.surveyId)), chunk)
        for (const part of touched(reach)) yield* sql`DELETE FROM analytics_reach WHERE survey_id IN ${sql.in(part)} AND count = 0`
        for (const part of touched(questions)) {
          yield* sql`DELETE FROM analytics_questions WHERE survey_id IN ${sql.in(part)} AND answered = 0`
          yield* sql`UPDATE analytics_questions SET numeric_sum = 0, numeric_sum_squares = 0
            WHERE survey_id IN ${sql.in(part)} AND numeric_count = 0 AND (numeric_sum <> 0 OR numeric_sum_squares <> 0)`
        }
        for (const part of touched(options)) yield* sql`DELETE FROM analytics_options WHERE survey_id IN ${sql.in(part)} AND count = 0`
        for (const part of touched(numbers)) yield* sql`DELETE FROM analytics_numbers WHERE survey_id IN ${sql.in(part)} AND count = 0`
      })

    /** Adds a delta to a survey's counters (creating its rows) and drops rows that fell to zero. */
    const addDelta = (surveyId: SurveyId, delta: Aggregates, signature: string) => addDeltas([{ surveyId, delta, signature }])

    /** Forgets the counters kept under a key (a survey's, or a rebuild's); contributions stay. */
    const clearCounters = (key: SurveyId) =>
      Effect.forEach(counterTables, (table) => sql`DELETE FROM ${sql(table)} WHERE survey_id = ${key}`, { discard: true })

    /**
     * The counters kept under `from` become those of `to`, whose own are dropped first: statements
     * over the survey's counter rows (one per question, option value and distinct number), none
     * over its responses.
     */
    const moveCounters = (from: SurveyId, to: SurveyId) =>
      Effect.zipRight(
        clearCounters(to),
        Effect.forEach(counterTables, (table) => sql`UPDATE ${sql(table)} SET survey_id = ${to} WHERE survey_id = ${from}`, {
          discard: true
        })
      )

    const attachAnswers = (rows: ReadonlyArray<Row>, answers: ReadonlyArray<Row>): Array<CurrentResponse> => {
      const byResponse = new Map<ResponseId, Array<{ questionId: string; values: ReadonlyArray<string> }>>()
      for (const row of answers) {
        const { questionId, responseId, values } = AnswerValuesColumns.read(row)
        const list = byResponse.get(responseId) ?? []
        list.push({ questionId, values })
        byResponse.set(responseId, list)
      }
      return rows.map(ResponseColumns.read).map((r) => ({ ...r, answers: byResponse.get(r.id) ?? [] }))
    }

    const answersOf = (ids: ReadonlyArray<ResponseId>) =>
      ids.length === 0
        ? Effect.succeed([])
        : sql`SELECT ${sql.literal(AnswerValuesColumns.columns)} FROM answers WHERE response_id IN ${sql.in(ids)}`.values

    /** Responses as they are now, with their answers; missing ids are left out. */
    const currentResponses = (ids: ReadonlyArray<ResponseId>) =>
      Effect.forEach(Arr.chunksOf(ids, chunk), (part) =>
        Effect.gen(function*() {
          const rows = yield* sql`SELECT ${sql.literal(ResponseColumns.columns)} FROM responses
            WHERE id IN ${sql.in(part)}`.values
          return attachAnswers(rows, yield* answersOf(part))
        })).pipe(Effect.map(Arr.flatten))

    /** One keyset page of a survey's responses with their answers, for a rebuild. */
    const responsePage = (surveyId: SurveyId, after: PagePosition | null, limit: number) =>
      Effect.gen(function*() {
        const rows = yield* sql`SELECT ${sql.literal(PagedResponseColumns.columns)} FROM responses
          WHERE survey_id = ${surveyId}
          ${after === null ? sql`` : sql`AND (created_at, id) > (${after.createdAt}, ${after.id})`}
          ORDER BY created_at, id LIMIT ${limit}`.values
        const last = rows[rows.length - 1]
        const ids = rows.map(PagedResponseColumns.at.id)
        const next = last === undefined
          ? null
          : { id: PagedResponseColumns.at.id(last), createdAt: PagedResponseColumns.at.createdAt(last) }
        return { responses: attachAnswers(rows, yield* answersOf(ids)), next }
      })

    const contributionsOf = (ids: ReadonlyArray<ResponseId>) =>
      Effect.forEach(Arr.chunksOf(ids, chunk), (part) =>
        sql`SELECT ${sql.literal(ContributionColumns.columns)} FROM analytics_contributions
            WHERE response_id IN ${sql.in(part)}`.values).pipe(
          Effect.map((parts): ReadonlyArray<StoredContribution> => Arr.flatten(parts).map(ContributionColumns.read))
        )

    const saveContributions = (rows: ReadonlyArray<StoredContribution>) =>
      Effect.forEach(Arr.chunksOf(rows, chunk), (part) =>
        sql`INSERT INTO analytics_contributions ${
          sql.insert(part.map((r) => ({
            responseId: r.responseId,
            surveyId: r.surveyId,
            contribution: JSON.stringify(r.contribution),
            generation: r.generation
          })))
        } ON CONFLICT (response_id) DO UPDATE SET survey_id = excluded.survey_id,
          contribution = excluded.contribution, generation = excluded.generation`, { discard: true })

    const deleteContributions = (ids: ReadonlyArray<ResponseId>) =>
      Effect.forEach(Arr.chunksOf(ids, chunk), (part) =>
        sql`DELETE FROM analytics_contributions WHERE response_id IN ${sql.in(part)}`, { discard: true })

    /**
     * A survey's questions and counters, read in one statement, so both belong to the same moment
     * (on the reader's connection: GET /analytics is a request-path read).
     */
    const snapshot = (surveyId: SurveyId) =>
      Effect.map(reader.values(analyticsSnapshotSql, [surveyId]), foldCounters)

    /** The layout signatures these surveys' stored counters were built against; a survey without any is absent. */
    const storedSignatures = (surveyIds: ReadonlyArray<SurveyId>) =>
      Effect.gen(function*() {
        const bySurvey = new Map<SurveyId, string>()
        for (const part of Arr.chunksOf(Arr.dedupe(surveyIds), chunk)) {
          const rows = yield* sql`SELECT ${sql.literal(SurveySignatureColumns.columns)} FROM analytics_surveys
            WHERE survey_id IN ${sql.in(part)}`.values
          for (const row of rows.map(SurveySignatureColumns.read)) bySurvey.set(row.surveyId, row.signature)
        }
        return bySurvey
      })

    /** The layout signature a survey's stored counters were built against, or null. */
    const storedSignature = (surveyId: SurveyId) =>
      Effect.map(storedSignatures([surveyId]), (bySurvey) => bySurvey.get(surveyId) ?? null)

    // Read at the start of the aggregator's transaction: on PostgreSQL the row stays locked until it
    // commits, so two processes never apply the same changes (on SQLite the transaction holds the
    // write lock from its start).
    const position = Effect.map(
      sql`SELECT ${sql.literal(PositionColumns.columns)} FROM analytics_position p WHERE id = 1${dialect.lockRows("p")}`
        .values,
      (rows) => (rows[0] === undefined ? 0 : PositionColumns.at.seq(rows[0]))
    )
    const setPosition = (seq: number) => sql`UPDATE analytics_position SET seq = ${seq} WHERE id = 1 AND seq < ${seq}`
    const latestChange = Effect.map(
      sql`SELECT ${sql.literal(LatestChangeColumns.columns)} FROM response_changes`.values,
      (rows) => (rows[0] === undefined ? 0 : LatestChangeColumns.at.seq(rows[0]) ?? 0)
    )
    /**
     * How many changes the aggregator has yet to apply, in one statement without a lock or a
     * transaction: what its idle poll reads. A step reads the position again, locked.
     */
    const lag = Effect.map(sql`SELECT ${sql.literal(LagColumns.columns)}`.values, (rows) => {
      const row = rows[0]
      return row === undefined
        ? { changes: 0, rebuilding: false }
        : {
          changes: Math.max(0, (LagColumns.at.latest(row) ?? 0) - (LagColumns.at.position(row) ?? 0)),
          rebuilding: LagColumns.at.rebuilding(row) !== null
        }
    })
    /**
     * Drops consumed changes, those after `after` up to `upTo`: the aggregator is the log's only
     * reader, its position only grows, and what lies at or below it was dropped when it moved there.
     * A closed range is walked by the primary key; an open one ("seq <= upTo") would be priced by a
     * planner without statistics as a third of the log, and the log read whole on every step.
     */
    const pruneChanges = (after: number, upTo: number) =>
      sql`DELETE FROM response_changes WHERE seq > ${after} AND seq <= ${upTo}`
    /**
     * How far the change log is settled (`SqlDialect.settledSeq`): read in a short transaction of
     * its own, before the step's; undefined on SQLite, where there is no bound.
     */
    const settledChanges = dialect.settledSeq("response_changes")
    /** The next changes past `seq`, up to `upTo` when given (`settledChanges`): none passes over a change still being written. */
    const changesAfter = (seq: number, limit: number, upTo: number | undefined) =>
      Effect.map(
        sql`SELECT ${sql.literal(ChangeColumns.columns)} FROM response_changes
            WHERE seq > ${seq}${upToSeq(sql, upTo)} ORDER BY seq LIMIT ${limit}`.values,
        (rows) => rows.map(ChangeColumns.read)
      )
    const surveyIds = Effect.map(
      sql`SELECT ${sql.literal(SurveyIdColumns.columns)} FROM surveys ORDER BY id`.values,
      (rows) => rows.map(SurveyIdColumns.at.id)
    )

    const surveyExists = (surveyId: SurveyId) =>
      Effect.map(sql`SELECT 1 AS found FROM surveys WHERE id = ${surveyId}`.values, (rows) => rows.length > 0)

    // A full rebuild writes a contribution per response: the write-ahead log is folded back into
    // the database at once rather than on the next small commit of a running server (SQLite only).
    const checkpoint = dialect.choose({
      sqlite: () => Effect.asVoid(sql.unsafe("PRAGMA wal_checkpoint(TRUNCATE)")),
      pg: () => Effect.void
    })

    return {
      surveyExists,
      questionsOf,
      questionsOfSurveys,
      storedLayouts,
      load,
      snapshot,
      storedSignature,
      storedSignatures,
      addDelta,
      addDeltas,
      clearCounters,
      moveCounters,
      currentResponses,
      responsePage,
      contributionsOf,
      saveContributions,
      deleteContributions,
      position,
      setPosition,
      latestChange,
      lag,
      settledChanges,
      changesAfter,
      pruneChanges,
      surveyIds,
      checkpoint
    } as const
  })
}) {}
