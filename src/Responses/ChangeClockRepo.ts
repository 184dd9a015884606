// Measured shortcut (docs/architecture.md#measured-shortcuts): `bun run bench:completions`; guarded by test/PgRaces.test.ts, test/PgPool.test.ts and test/Sync.test.ts.
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

/** `announced`: the c0 that the save's read of the survey announced (`announcingRead`); PostgreSQL requires it. */
type Stamp = (change: Change, now: string, announced: string | undefined) => Effect.Effect<string, DatabaseError>

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

/** The ISO text of a `timestamptz` expression, in the service's form. */
const isoText = (instant: string) => `to_char((${instant}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`

/**
 * The survey's high-water on PostgreSQL: the latest instant a committed change of the survey
 * carries, '' when there is none. The clock row keeps it from going back when the latest responses
 * are deleted (ResponseDeletionRepo `raiseClock`). `?1` is the survey id; `except` (`?2`) leaves
 * out a response that the save itself created, which no one else sees yet.
 */
const highWater = (except: boolean) =>
  `GREATEST(COALESCE((SELECT last_updated_at FROM response_clock WHERE survey_id = ?1), ''),
            COALESCE((SELECT MAX(updated_at) FROM responses WHERE survey_id = ?1${except ? " AND id <> ?2" : ""}), ''))`

/**
 * A survey's announce keys: an advisory lock key of 20 bits of the survey's hash above 43 bits of
 * milliseconds since the Unix epoch. Two surveys of one hash only make each other's readers'
 * bounds lower, never wrong.
 */
const millisBits = 43
const millisMask = 2 ** millisBits - 1
const surveyBits = `(hashtext(?1) & 1048575)::int8`
const announceKey = (instant: string) =>
  `(${surveyBits} << ${millisBits}) | CASE WHEN ${instant} = '' THEN 0
     ELSE LEAST(GREATEST((extract(epoch FROM (${instant})::timestamptz) * 1000)::int8, 0), ${millisMask}) END`

/**
 * The bound of a read by `updatedAfter` on PostgreSQL; its one parameter is the survey id. One
 * statement: the survey's high-water under the statement's snapshot, and the earliest instant
 * announced by a save of the survey still in flight, read from `pg_locks` after that snapshot was
 * taken; the bound is the smaller. A change that a later snapshot does not see yet carries an
 * instant after it (docs/architecture.md#the-change-clock).
 */
export const boundStatement = `SELECT CASE WHEN a.ms IS NULL THEN k.h
    ELSE LEAST(k.h, ${isoText(`to_timestamp(0) + a.ms * interval '1 millisecond'`)}) END AS bound
  FROM (SELECT ${highWater(false)} AS h) k,
    (SELECT MIN(held.key & ${millisMask}) AS ms FROM (
       SELECT (classid::int8 << 32) | objid::int8 AS key FROM pg_locks
       WHERE locktype = 'advisory' AND objsubid = 1
         AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
     ) held
     WHERE held.key >> ${millisBits} = ${surveyBits}) a`

/**
 * PostgreSQL's announce: the high-water c0 under this statement's snapshot, and the shared announce
 * lock of c0, held until the transaction ends. Shared locks never wait for one another.
 */
const announceSelect =
  `SELECT k.c0, pg_advisory_xact_lock_shared(${announceKey("k.c0")}) FROM (SELECT ${highWater(false)} AS c0) k`

/**
 * The announce of a save of survey `?1`, run by the save's first read of the survey (PostgreSQL,
 * SurveyRepo `findWithQuestions`): `cte` goes before that read's `SELECT` and `column` first in its
 * list, which then holds c0 on every row, to be given to `stamp`. The read is then the announce,
 * one round trip less; it must run inside the save's transaction, before the response is written.
 */
const AnnouncedColumn = rowShape({ c0: column.text("(SELECT c0 FROM announced) AS announced_c0") })

export const announcingRead = {
  cte: `WITH announced AS MATERIALIZED (${announceSelect})`,
  column: AnnouncedColumn.columns,
  /** The c0 of a row of the read (its first column). */
  c0: AnnouncedColumn.at.c0
} as const

/**
 * PostgreSQL's stamp, after the announce: the instant is the later of `now` (`?3`), one millisecond
 * after the high-water c under this statement's snapshot, and one millisecond after c0 (`?4`); the
 * response's stamps, its rendering (`?5`) and the change row take it.
 */
const stampText = (change: Pick<Change, "created" | "completed">) => {
  const at = "(SELECT at FROM instant)"
  return toNumbered(`WITH instant AS (
      SELECT ${isoText(`GREATEST(?3::timestamptz, NULLIF(GREATEST(${highWater(change.created)}, ?4), '')::timestamptz + interval '1 millisecond')`)} AS at
    ), stamped AS (
      UPDATE responses SET ${stampColumns(change, at)}, ${renderingColumns("?5", "?1")} WHERE id = ?2 RETURNING id
    )
    INSERT INTO response_changes (response_id, survey_id, changed_at) SELECT ?2, ?1, at FROM instant
    RETURNING changed_at AS at`)
}
const stampStatements = [false, true].map((created) => [false, true].map((completed) => stampText({ created, completed })))
const stampStatement = (change: Change) => stampStatements[Number(change.created)]?.[Number(change.completed)] ?? stampText(change)

/**
 * PostgreSQL: no row that another save of the survey waits for. The save's read of the survey
 * announced it (`announcingRead`), holding the survey's announce lock of c0, so that a reader's
 * bound stays below this change until it commits; the stamp is a later statement with a fresh
 * snapshot, so that its high-water c is at least what a reader whose bound statement ran before
 * the announce read: the instant is after both (docs/architecture.md#the-change-clock).
 */
const pgStamp = (sql: SqlClient.SqlClient): Stamp => (change, now, announced) =>
  Effect.gen(function*() {
    const { responseId, surveyId } = change
    if (announced === undefined) {
      return yield* Effect.dieMessage(`a save of survey ${surveyId} stamped without announcing it (SurveyRepo findWithQuestionsAnnouncing)`)
    }
    const rows = yield* sql.unsafe(stampStatement(change), [surveyId, responseId, now, announced, change.rendering]).values
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
       * clock stepped back), so that within a survey `updatedAt` grows.
       *
       * Call it after the save's other writes to the response, with the c0 that the save's read
       * of the survey announced (`SurveyRepo.findWithQuestionsAnnouncing`; undefined on SQLite,
       * required on PostgreSQL). On SQLite the save's transaction
       * is the one writer from its first write; on PostgreSQL saves of one survey do not wait for
       * one another here, and a reader by `updatedAfter` lists nothing at or after this instant
       * until the save commits (`boundStatement`).
       */
      stamp: Effect.fn("ChangeClockRepo.stamp")(function*(change: Change, announced: string | undefined) {
        return yield* stampOn(change, toIso(yield* Clock.currentTimeMillis), announced)
      }),
      /**
       * The statement that counts a new response in its survey's `responseCount`, to run as the
       * last of a save (with its events, `Outbox.appendAll`): on PostgreSQL the survey's row stays
       * locked from it to commit, and the survey's other new responses wait for it meanwhile.
       */
      countingCreated: (surveyId: string): Statement.Statement<unknown> =>
        sql`UPDATE surveys SET response_count = response_count + 1 WHERE id = ${surveyId}`
    } as const
  })
}) {}
