import { SqlClient, type SqlError, type Statement } from "@effect/sql"
import { Context, Effect, Layer, Option } from "effect"
import { isPgLockNotAvailable } from "./Busy.js"
import { toNumbered } from "./PgText.js"
import { column, rowShape } from "./Rows.js"

export { toNumbered }

/**
 * The two databases the service runs on. Statements are written once with `?` placeholders
 * where the text is built by hand (hot read paths, `sql.unsafe`); PostgreSQL numbers its
 * placeholders (`$1`, `$2`, …), so such a text passes through `positional` before it runs.
 * Tagged-template statements (`sql\`…\``) need nothing: the client's compiler numbers them.
 */
export type Dialect = "sqlite" | "pg"

export const dialectOf = (sql: SqlClient.SqlClient): Dialect =>
  sql.onDialectOrElse({ pg: () => "pg" as const, orElse: () => "sqlite" as const })

/** `text` (with `?` placeholders) as the client's database expects it. */
export const positional = (sql: SqlClient.SqlClient, text: string): string =>
  dialectOf(sql) === "pg" ? toNumbered(text) : text

/**
 * PostgreSQL: the statement with which a transaction lifts the statement timeout for its remaining
 * statements (migrations). The client's own bound on waiting for an answer
 * (src/Sql/PgServiceClient.ts) is lifted with it, until the transaction ends.
 */
export const LIFT_STATEMENT_TIMEOUT = "SET LOCAL statement_timeout = 0"

/** The tables read in order of their serial `seq` by a position that only moves forward. */
export type LogTable = "events" | "response_changes"

const Settled = rowShape({ seq: column.num("COALESCE(MAX(seq), 0) AS seq") })

/** PostgreSQL: waits for every transaction still writing to `table` and holds new writers back until this transaction ends. */
const holdLogWriters = (sql: SqlClient.SqlClient, table: LogTable) =>
  Effect.asVoid(sql.unsafe(`LOCK TABLE ${table} IN SHARE MODE`))

/**
 * How long, in milliseconds, a settling reader waits for the transactions still writing to a log
 * table (PostgreSQL). New writers queue behind its waiting lock, so a long writer (a batch of an
 * erasure) would otherwise hold every save back for its whole length; past this wait the reader
 * gives up for this round. Tests that hold a writer open on purpose set a longer one.
 */
export class SettleLockWait extends Context.Reference<SettleLockWait>()("Sql/SettleLockWait", {
  defaultValue: (): number => 50
}) {}

/**
 * PostgreSQL: the highest serial of `table` at or below which every row is final, read in a
 * transaction of its own (see `SqlDialectShape.settledSeq`).
 *
 * PostgreSQL hands out a serial when a row is inserted, not when its transaction commits: while
 * the transaction that took seq 10 is still open, seq 11 may already be committed and visible, and
 * a reader that moved its position past 11 would never see 10 (an event never delivered, a change
 * never counted). `holdLogWriters` waits for every transaction that wrote to the table and holds
 * new writers back; the highest serial read then has no hole below it that a later commit could
 * fill, and a writer let in afterwards takes a higher one. The lock is held for that one read
 * only: new rows wait for it for about one round trip, not for the reader's whole work (an
 * aggregator step, a fan-out). It waits at most `SettleLockWait` for the writers before it:
 * past that, the answer is the last one this process read for the table (0 before any), which
 * stays true, so the reader reads no further this round. Called inside another transaction it
 * would hold the lock until that one ends: it refuses to, as a defect.
 */
const pgSettledSeq = (
  sql: SqlClient.SqlClient,
  table: LogTable,
  lastSettled: Map<LogTable, number>
): Effect.Effect<number, SqlError.SqlError> =>
  Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (outer) =>
    Option.isSome(outer)
      ? Effect.dieMessage(`The settled position of ${table} is read in a transaction of its own, not inside another.`)
      : sql.withTransaction(
        Effect.zipRight(
          Effect.zipRight(
            Effect.flatMap(SettleLockWait, (ms) => sql.unsafe(`SET LOCAL lock_timeout = '${Math.max(1, Math.round(ms))}ms'`)),
            holdLogWriters(sql, table)
          ),
          Effect.map(
            sql.unsafe(`SELECT ${Settled.columns} FROM ${table}`).values,
            (rows) => rows[0] === undefined ? 0 : Settled.at.seq(rows[0])
          )
        )
      ).pipe(
        Effect.tap((seq) => Effect.sync(() => lastSettled.set(table, seq))),
        Effect.catchIf(isPgLockNotAvailable, () => Effect.succeed(lastSettled.get(table) ?? 0))
      ))

/** ` AND seq <= upTo`, or nothing when there is no bound: a log read stopped at `settledSeq`. */
export const upToSeq = (sql: SqlClient.SqlClient, upTo: number | undefined): Statement.Fragment =>
  upTo === undefined ? sql`` : sql` AND seq <= ${upTo}`

/**
 * What differs between the two databases, chosen once when the database layer is built. A
 * repository asks this service instead of branching on the client; feature services and handlers
 * never see it.
 */
export interface SqlDialectShape {
  readonly kind: Dialect
  /** ` FOR UPDATE OF alias` on PostgreSQL; nothing on SQLite, where a write transaction already excludes every other writer. */
  readonly lockRows: (alias: string) => Statement.Fragment
  /** `text` with `?` placeholders as the database expects it (numbered on PostgreSQL). */
  readonly positional: (text: string) => string
  /**
   * The serial of a log table up to which a reader by position may read without passing over a
   * row still being written (see `settledSeq`); undefined when there is no such bound (SQLite).
   * Outside the reader's transaction.
   */
  readonly settledSeq: (table: LogTable) => Effect.Effect<number | undefined, SqlError.SqlError>
  /**
   * Inside a writer's transaction: waits for the transactions still writing to a log table and
   * holds new ones back until this one ends (PostgreSQL), so that what this transaction reads of
   * the table's highest serial stays true past its commit. Nothing on SQLite, where the write
   * transaction already excludes every other writer.
   */
  readonly holdLogWriters: (table: LogTable) => Effect.Effect<void, SqlError.SqlError>
  /**
   * `sqlite` or `pg`, whichever is this database: for the few statements a repository keeps in
   * two forms (each written whole rather than assembled from fragments).
   */
  readonly choose: <A>(forms: { readonly sqlite: () => A; readonly pg: () => A }) => A
}

export class SqlDialect extends Context.Tag("Sql/SqlDialect")<SqlDialect, SqlDialectShape>() {}

const sqliteDialect = (sql: SqlClient.SqlClient): SqlDialectShape => ({
  kind: "sqlite",
  lockRows: () => sql``,
  positional: (text) => text,
  settledSeq: () => Effect.succeed(undefined),
  holdLogWriters: () => Effect.void,
  choose: (forms) => forms.sqlite()
})

const pgDialect = (sql: SqlClient.SqlClient, lastSettled = new Map<LogTable, number>()): SqlDialectShape => ({
  kind: "pg",
  lockRows: (alias) => sql.literal(` FOR UPDATE OF ${alias}`),
  positional: toNumbered,
  settledSeq: (table) => pgSettledSeq(sql, table, lastSettled),
  holdLogWriters: (table) => holdLogWriters(sql, table),
  choose: (forms) => forms.pg()
})

/** The dialect of the service's `SqlClient`. */
export const SqlDialectLive: Layer.Layer<SqlDialect, never, SqlClient.SqlClient> = Layer.effect(
  SqlDialect,
  Effect.map(SqlClient.SqlClient, (sql) => dialectOf(sql) === "pg" ? pgDialect(sql) : sqliteDialect(sql))
)
