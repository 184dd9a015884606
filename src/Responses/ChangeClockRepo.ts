// Measured shortcut (docs/architecture.md#measured-shortcuts): `bun run bench:scale --only completions`; guarded by test/PgRaces.test.ts and test/PgPool.test.ts.
import { SqlClient, type Statement } from "@effect/sql"
import { Clock, Effect } from "effect"
import { toIso } from "../Domain/Time.js"
import { SqlDialect } from "../Sql/Dialect.js"
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
}

type Stamp = (change: Change, now: string) => Effect.Effect<string, DatabaseError>

const millisOf = (instant: string | null): number => {
  const parsed = instant === null || instant === "" ? Number.NaN : Date.parse(instant)
  return Number.isFinite(parsed) ? parsed : Number.NEGATIVE_INFINITY
}

const Stamped = rowShape({ at: column.text("at") })
const Latest = rowShape({ last: column.nullableText("last") })

/** The response's columns that take the change's instant `at` (a value, or on PostgreSQL the statement's own). */
const stamps = (sql: SqlClient.SqlClient, change: Change, at: string | Statement.Fragment) =>
  sql`updated_at = ${at}${change.created ? sql`, created_at = ${at}` : sql``}${
    change.completed ? sql`, completed = 1, completed_at = ${at}` : sql``
  }`

/**
 * PostgreSQL's instant after `last` (an ISO text; empty or null when there is none) for a change
 * made at `now`: the later of `now` and one millisecond after `last`, in the service's ISO form.
 * The server computes it in the statement that locks the clock row, so that locking and
 * recording take one round trip.
 */
const following = (sql: SqlClient.SqlClient, last: Statement.Fragment, now: string) =>
  sql`to_char(GREATEST(${now}::timestamptz, NULLIF(${last}, '')::timestamptz + interval '1 millisecond') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`

/** PostgreSQL: one statement, the survey's clock row locked by it until commit. */
const pgStamp = (sql: SqlClient.SqlClient): Stamp => (change, now) =>
  Effect.gen(function*() {
    const { responseId, surveyId } = change
    // One statement locks the clock row, records the instant and writes what takes it: from here
    // to commit the survey's other saves wait, so nothing else runs in between. The first save
    // through the service follows the survey's imported responses. A save waiting here has
    // written only to its own rows: it holds nothing that the aggregator's or another survey's
    // writers wait for (the aggregator's `LOCK TABLE response_changes IN SHARE MODE` waits for
    // every transaction that wrote a change row, src/Sql/Dialect.ts `readSettled`). Every part
    // after the clock reads its instant, so the clock row is always locked before the survey row.
    const imported = sql`(SELECT MAX(updated_at) FROM responses WHERE survey_id = ${surveyId} AND id <> ${responseId})`
    const at = sql`(SELECT at FROM clock)`
    const rows = yield* sql`WITH clock AS (
            INSERT INTO response_clock AS c (survey_id, last_updated_at)
            VALUES (${surveyId}, ${following(sql, imported, now)})
            ON CONFLICT (survey_id) DO UPDATE SET last_updated_at = ${following(sql, sql`c.last_updated_at`, now)}
            RETURNING c.last_updated_at AS at
          ), stamped AS (
            UPDATE responses SET ${stamps(sql, change, at)} WHERE id = ${responseId} RETURNING id
          )${
      change.created
        ? sql`, counted AS (
            UPDATE surveys SET response_count = response_count + 1 WHERE id = ${surveyId} AND ${at} IS NOT NULL RETURNING id
          )`
        : sql``
    }
          INSERT INTO response_changes (response_id, survey_id, changed_at) SELECT ${responseId}, ${surveyId}, at FROM clock
          RETURNING changed_at AS at`.values
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
    yield* sql`UPDATE responses SET ${stamps(sql, change, at)} WHERE id = ${responseId}`
    if (change.created) yield* sql`UPDATE surveys SET response_count = response_count + 1 WHERE id = ${surveyId}`
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
       * response, `completedAt` of a completing save), the survey's response count for a new
       * response, and the `response_changes` row the aggregator follows. The instant is the
       * current time, or one millisecond after the last instant given out for the survey when that
       * is later (a burst within one millisecond, a wall clock stepped back).
       *
       * Call it last in the save's transaction: from here to commit the survey's writers take
       * turns (SQLite's one write transaction; PostgreSQL's lock on the survey's clock row, and on
       * the survey row for a new response), so within a survey `updatedAt` grows in commit order,
       * and every round trip after it makes the survey's other saves wait.
       */
      stamp: Effect.fn("ChangeClockRepo.stamp")(function*(change: Change) {
        return yield* stampOn(change, toIso(yield* Clock.currentTimeMillis))
      })
    } as const
  })
}) {}
