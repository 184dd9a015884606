import { SqlClient } from "@effect/sql"
import { Array as Arr, Effect } from "effect"
import { type ResponseId, responseId as brandResponseId, type SurveyId, surveyId as brandSurveyId } from "../Domain/Ids.js"
import { SqlDialect } from "../Sql/Dialect.js"
import { column, rowShape } from "../Sql/Rows.js"
import type { PagePosition } from "./AggregateRepo.js"

const chunk = 500

const RebuildColumns = rowShape({
  surveyId: column.map(column.text("survey_id"), brandSurveyId),
  generation: column.num("generation"),
  liveGeneration: column.num("live_generation"),
  active: column.flag("active"),
  signature: column.text("signature"),
  afterCreatedAt: column.nullableText("after_created_at"),
  afterId: column.nullableText("after_id"),
  passed: column.num("passed"),
  rebuiltAt: column.nullableText("rebuilt_at")
})
const SurveyIdColumns = rowShape({ surveyId: column.map(column.text("survey_id"), brandSurveyId) })
const ResponseIdColumns = rowShape({ id: column.map(column.text("id"), brandResponseId) })

/**
 * Where a survey's counters stand (`analytics_rebuilds`). `liveGeneration` names the counters the
 * analytics answer from, kept under the survey's id; while `active`, generation `generation` is
 * being built under `shadowOf(surveyId)`, walking the survey's responses in (created_at, id)
 * order, past `after` so far. A survey never rebuilt has no row: generation 0, live, not active.
 */
export interface RebuildState {
  readonly surveyId: SurveyId
  readonly generation: number
  readonly liveGeneration: number
  readonly active: boolean
  readonly signature: string
  readonly after: PagePosition | null
  readonly passed: number
  readonly rebuiltAt: string | null
}

export const neverRebuilt = (surveyId: SurveyId): RebuildState => ({
  surveyId,
  generation: 0,
  liveGeneration: 0,
  active: false,
  signature: "",
  after: null,
  passed: 0,
  rebuiltAt: null
})

const stateOf = (row: ReturnType<typeof RebuildColumns.read>): RebuildState => ({
  surveyId: row.surveyId,
  generation: row.generation,
  liveGeneration: row.liveGeneration,
  active: row.active,
  signature: row.signature,
  after: row.afterCreatedAt === null || row.afterId === null
    ? null
    : { createdAt: row.afterCreatedAt, id: brandResponseId(row.afterId) },
  passed: row.passed,
  rebuiltAt: row.rebuiltAt
})

/** The key a rebuild's counters are kept under until they replace the survey's: no survey has it. */
export const shadowOf = (surveyId: SurveyId): SurveyId => brandSurveyId(`${surveyId}#rebuild`)

/** How a read of rebuild states locks the rows it finds (PostgreSQL; SQLite's writer is alone). */
export type RebuildLock = "none" | "share" | "update"

/** The statements of background rebuilds: their state rows, and which responses a walk has passed. */
export class RebuildRepo extends Effect.Service<RebuildRepo>()("Analytics/RebuildRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const dialect = yield* SqlDialect
    const locking = (lock: RebuildLock) =>
      dialect.choose({
        sqlite: () => sql``,
        pg: () => lock === "share" ? sql` FOR SHARE` : lock === "update" ? sql` FOR UPDATE` : sql``
      })

    /** The states of these surveys, those never rebuilt included. */
    const states = (surveyIds: ReadonlyArray<SurveyId>, lock: RebuildLock = "none") =>
      Effect.gen(function*() {
        const bySurvey = new Map<SurveyId, RebuildState>()
        // Sorted: two transactions locking rows of the same surveys lock them in one order.
        for (const part of Arr.chunksOf(Arr.dedupe(surveyIds).sort(), chunk)) {
          const rows = yield* sql`SELECT ${sql.literal(RebuildColumns.columns)} FROM analytics_rebuilds
            WHERE survey_id IN ${sql.in(part)} ORDER BY survey_id${locking(lock)}`.values
          for (const row of rows) {
            const state = stateOf(RebuildColumns.read(row))
            bySurvey.set(state.surveyId, state)
          }
        }
        for (const id of surveyIds) if (!bySurvey.has(id)) bySurvey.set(id, neverRebuilt(id))
        return bySurvey
      })

    const stateOfSurvey = (surveyId: SurveyId, lock: RebuildLock = "none") =>
      Effect.map(states([surveyId], lock), (bySurvey) => bySurvey.get(surveyId) ?? neverRebuilt(surveyId))

    /**
     * Starts a rebuild of the survey's counters for question layout `signature`, or starts again
     * the one under way: a new generation, from the first response. One statement on one row.
     */
    const request = (surveyId: SurveyId, signature: string, now: string) =>
      sql`INSERT INTO analytics_rebuilds ${
        sql.insert({
          surveyId,
          generation: 1,
          liveGeneration: 0,
          active: 1,
          signature,
          afterCreatedAt: null,
          afterId: null,
          passed: 0,
          requestedAt: now
        })
      } ON CONFLICT (survey_id) DO UPDATE SET generation = analytics_rebuilds.generation + 1, active = 1,
          signature = excluded.signature, after_created_at = NULL, after_id = NULL, passed = 0,
          requested_at = excluded.requested_at`.pipe(Effect.asVoid)

    /** Records how far a rebuild's walk went. */
    const advance = (surveyId: SurveyId, generation: number, after: PagePosition, passed: number) =>
      sql`UPDATE analytics_rebuilds SET after_created_at = ${after.createdAt}, after_id = ${after.id}, passed = ${passed}
        WHERE survey_id = ${surveyId} AND generation = ${generation}`.pipe(Effect.asVoid)

    /** The rebuilt generation is now the one the analytics answer from. */
    const finish = (surveyId: SurveyId, generation: number, now: string) =>
      sql`UPDATE analytics_rebuilds SET active = 0, live_generation = generation, after_created_at = NULL,
          after_id = NULL, rebuilt_at = ${now}
        WHERE survey_id = ${surveyId} AND generation = ${generation}`.pipe(Effect.asVoid)

    /** A rebuild whose survey is gone: its row goes. */
    const drop = (surveyId: SurveyId) => sql`DELETE FROM analytics_rebuilds WHERE survey_id = ${surveyId}`.pipe(Effect.asVoid)

    /** Surveys with a rebuild under way, the longest waiting first. */
    const pending = (limit: number) =>
      Effect.map(
        sql`SELECT ${sql.literal(SurveyIdColumns.columns)} FROM analytics_rebuilds WHERE active = 1
          ORDER BY requested_at, survey_id LIMIT ${limit}`.values,
        (rows) => rows.map(SurveyIdColumns.at.surveyId)
      )

    /**
     * Which of these responses of the survey a walk that went as far as `after` has passed: the
     * comparison is the database's, as the walk's order is (its collation included).
     */
    const passedOf = (surveyId: SurveyId, after: PagePosition | null, ids: ReadonlyArray<ResponseId>) =>
      Effect.gen(function*() {
        const passed = new Set<ResponseId>()
        if (after === null || ids.length === 0) return passed
        for (const part of Arr.chunksOf(ids, chunk)) {
          const rows = yield* sql`SELECT ${sql.literal(ResponseIdColumns.columns)} FROM responses
            WHERE survey_id = ${surveyId} AND id IN ${sql.in(part)}
              AND (created_at, id) <= (${after.createdAt}, ${after.id})`.values
          for (const row of rows) passed.add(ResponseIdColumns.at.id(row))
        }
        return passed
      })

    return { states, stateOf: stateOfSurvey, request, advance, finish, drop, pending, passedOf } as const
  })
}) {}

/**
 * The counters a stored contribution of generation `generation` is counted in: the survey's while
 * no rebuild is under way and it is of their generation, the rebuild's when it is of the one being
 * built; none otherwise (counters since replaced or dropped, or frozen while a rebuild runs).
 */
export const countedIn = (state: RebuildState, generation: number): SurveyId | null =>
  state.active
    ? (generation === state.generation ? shadowOf(state.surveyId) : null)
    : (generation === state.liveGeneration ? state.surveyId : null)
