/**
 * Measured shortcut: on PostgreSQL a save's stamp is one statement (the survey's clock row, the
 * response's stamps and rendering, the change row), run after the save's other writes, skipping a
 * round trip per write while the survey's clock row is locked. The row lock keeps a survey's
 * instants in commit order (test/SyncRace.test.ts, test/PgRaces.test.ts, test/PgPool.test.ts,
 * test/Sync.test.ts). Measurement: docs/performance.md#measured-shortcuts, "The stamp in one
 * statement".
 */
import { SqlClient, type Statement } from "@effect/sql"
import { Clock, Effect } from "effect"
import { toIso } from "../Domain/Time.js"
import { SqlDialect, toNumbered } from "../Sql/Dialect.js"
import { column, rowShape } from "../Sql/Rows.js"
import type { DatabaseError } from "../Sql/Transactions.js"

/** A save of one response, about to commit: what its change instant is written into. */
export interface Change {
  readonly surveyId: string
  readonly responseId: string
  /** The save created the response: its `createdAt` is the instant too, and the survey counts one more. */
  readonly created: boolean
  /** The save completes the response: `completed` is set and `completedAt` is the instant. */
  readonly completed: boolean
  /**
   * The response's answers rendered in wire form (src/Responses/AnswerDocumentRepo.ts), as they
   * stand after the save: stored with the stamps, tagged with the survey's current answer layout,
   * so that the save writes its response row once more, not twice.
   */
  readonly rendering: string
}

type Stamp = (change: Change, now: string) => Effect.Effect<string, DatabaseError>

const millisOf = (instant: string | null): number => {
  const parsed = instant === null || instant === "" ? Number.NaN : Date.parse(instant)
  return Number.isFinite(parsed) ? parsed : Number.NEGATIVE_INFINITY
}

const Stamped = rowShape({ at: column.text("at") })
const Latest = rowShape({ last: column.nullableText("last") })

/** The response's columns that take the change's instant, the SQL `at`. */
const stampColumns = (change: Pick<Change, "created" | "completed">, at: string) =>
  `updated_at = ${at}${change.created ? `, created_at = ${at}` : ""}${
    change.completed ? `, completed = 1, completed_at = ${at}` : ""
  }`

/** The response's stored rendering, the SQL `rendering`, tagged with the layout of survey `survey` (SQL). */
const renderingColumns = (rendering: string, survey: string) =>
  `answers_json = ${rendering}, answers_layout = (SELECT answer_layout FROM surveys WHERE id = ${survey})`

/**
 * The instant after `last` (ISO text, empty or null when there is none) for a change made at `now`
 * (`?3`): the later of the two, one millisecond after `last`, in the service's ISO form.
 */
const following = (last: string) =>
  `to_char(GREATEST(?3::timestamptz, NULLIF(${last}, '')::timestamptz + interval '1 millisecond') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`

/**
 * PostgreSQL's stamp: one statement locks the survey's clock row until commit and gives the change
 * the instant after the row's and after the survey's latest response (imported responses carry
 * no clock row), then writes the response's stamps, its rendering (`?4`) and the change row. The upsert waits for a save of the survey that holds the row, and then
 * reads the row as that save committed it, so each instant follows the one committed before it.
 * test/QueryPlans.test.ts checks its plan.
 */
export const stampText = (change: Pick<Change, "created" | "completed">) => {
  const at = "(SELECT at FROM clock)"
  return toNumbered(`WITH clock AS (
      INSERT INTO response_clock AS c (survey_id, last_updated_at)
      VALUES (?1, ${following("(SELECT MAX(updated_at) FROM responses WHERE survey_id = ?1 AND id <> ?2)")})
      ON CONFLICT (survey_id) DO UPDATE SET last_updated_at = GREATEST(excluded.last_updated_at, ${following("c.last_updated_at")})
      RETURNING c.last_updated_at AS at
    ), stamped AS (
      UPDATE responses SET ${stampColumns(change, at)}, ${renderingColumns("?4", "?1")} WHERE id = ?2 RETURNING id
    )
    INSERT INTO response_changes (response_id, survey_id, changed_at) SELECT ?2, ?1, at FROM clock
    RETURNING changed_at AS at`)
}
const stampStatements = [false, true].map((created) => [false, true].map((completed) => stampText({ created, completed })))
const stampStatement = (change: Change) => stampStatements[Number(change.created)]?.[Number(change.completed)] ?? stampText(change)

/**
 * PostgreSQL: from the stamp to commit, the survey's other saves (and its deletions, which raise
 * the same row) wait for the clock row, so that within a survey instants follow commit order
 * (docs/architecture.md#the-change-clock). Everything else of the save is written before.
 */
const pgStamp = (sql: SqlClient.SqlClient): Stamp => (change, now) =>
  Effect.gen(function*() {
    const { responseId, surveyId } = change
    const rows = yield* sql.unsafe(stampStatement(change), [surveyId, responseId, now, change.rendering]).values
    const row = rows[0]
    if (row === undefined) return yield* Effect.dieMessage(`no change instant for survey ${surveyId}`)
    return Stamped.read(row).at
  })

/** SQLite holds one write transaction at a time: reading and recording need no lock. */
const sqliteStamp = (sql: SqlClient.SqlClient): Stamp => (change, now) =>
  Effect.gen(function*() {
    const { responseId, surveyId } = change
    // The clock row, or for a survey whose responses were only imported so far, their latest change.
    const rows = yield* sql`
          SELECT MAX(t) AS last FROM (
            SELECT last_updated_at AS t FROM response_clock WHERE survey_id = ${surveyId}
            UNION ALL
            SELECT MAX(updated_at) AS t FROM responses WHERE survey_id = ${surveyId} AND id <> ${responseId}
          ) AS known`.values
    const last = rows[0] === undefined ? null : Latest.read(rows[0]).last
    const at = toIso(Math.max(Date.parse(now), millisOf(last) + 1))
    yield* sql`INSERT INTO response_clock (survey_id, last_updated_at) VALUES (${surveyId}, ${at})
          ON CONFLICT (survey_id) DO UPDATE SET last_updated_at = excluded.last_updated_at`
    yield* sql.unsafe(
      `UPDATE responses SET ${stampColumns(change, "?1")}, ${renderingColumns("?3", "?4")} WHERE id = ?2`,
      [at, responseId, change.rendering, surveyId]
    )
    yield* sql`INSERT INTO response_changes ${sql.insert({ responseId, surveyId, changedAt: at })}`
    return at
  })

/**
 * The change clock: gives a save its instant and records the change. Its two implementations,
 * one a database, are chosen once when the layer is built.
 */
export class ChangeClockRepo extends Effect.Service<ChangeClockRepo>()("Responses/ChangeClockRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const stampOn = (yield* SqlDialect).choose({ sqlite: () => sqliteStamp(sql), pg: () => pgStamp(sql) })
    return {
      /**
       * Gives a save its instant and records the change: `updatedAt` (and `createdAt` of a new
       * response, `completedAt` of a completing save) and the `response_changes` row the
       * aggregator follows. The instant is the current time, or one millisecond after the latest
       * instant of the survey's changes when that is later (a burst within one millisecond, a wall
       * clock stepped back), so that within a survey `updatedAt` grows in commit order.
       *
       * Call it after the save's other writes to the response: from here to commit the survey's
       * writers take turns (SQLite's one write transaction; PostgreSQL's lock on the survey's
       * clock row), and every round trip after it makes the survey's other saves wait.
       */
      stamp: Effect.fn("ChangeClockRepo.stamp")(function*(change: Change) {
        return yield* stampOn(change, toIso(yield* Clock.currentTimeMillis))
      }),
      /**
       * The statement that counts a new response in its survey's `responseCount`, to run as the
       * last of a save (with its events, `OutboxRepo.appendAll`): on PostgreSQL the survey's row stays
       * locked from it to commit, and the survey's other new responses wait for it meanwhile.
       */
      countingCreated: (surveyId: string): Statement.Statement<unknown> =>
        sql`UPDATE surveys SET response_count = response_count + 1 WHERE id = ${surveyId}`
    } as const
  })
}) {}
