import { SqlClient, type SqlError, type Statement } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { toNumbered } from "./PgText.js"

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
 * statements (migrations). The client's own bound on waiting for an answer (src/Sql/Database.ts)
 * is lifted with it, until the transaction ends.
 */
export const LIFT_STATEMENT_TIMEOUT = "SET LOCAL statement_timeout = 0"

/** The tables read in order of their serial `seq` by a position that only moves forward. */
export type LogTable = "events" | "response_changes"

/**
 * `read` again once every transaction still writing to `table` has ended, when `read` found rows
 * past the reader's position; call it inside the reader's transaction.
 *
 * PostgreSQL hands out a serial when a row is inserted, not when its transaction commits: while
 * the transaction that took seq 10 is still open, seq 11 may already be committed and visible, and
 * a reader that moved its position past 11 would never see 10 (an event never delivered, a change
 * never counted). `LOCK TABLE … IN SHARE MODE` waits for every transaction that wrote to the table
 * and holds new writers back until the reader's transaction ends, so the second read sees no hole
 * that a later commit could fill. On SQLite the reader's transaction already holds the one write
 * lock, so `read` is answered as it is. A read that finds nothing new takes no lock.
 */
export const readSettled = <A, E, R>(
  sql: SqlClient.SqlClient,
  table: LogTable,
  read: Effect.Effect<A, E, R>,
  foundNew: (result: A) => boolean
): Effect.Effect<A, E | SqlError.SqlError, R> =>
  dialectOf(sql) === "pg"
    ? Effect.flatMap(read, (first) =>
      foundNew(first) ? Effect.zipRight(sql.unsafe(`LOCK TABLE ${table} IN SHARE MODE`), read) : Effect.succeed(first))
    : read

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
  /** `read` on a log table by position, never passing over a row still being written (see `readSettled`). */
  readonly readSettled: <A, E, R>(
    table: LogTable,
    read: Effect.Effect<A, E, R>,
    foundNew: (result: A) => boolean
  ) => Effect.Effect<A, E | SqlError.SqlError, R>
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
  readSettled: (_table, read) => read,
  choose: (forms) => forms.sqlite()
})

const pgDialect = (sql: SqlClient.SqlClient): SqlDialectShape => ({
  kind: "pg",
  lockRows: (alias) => sql.literal(` FOR UPDATE OF ${alias}`),
  positional: toNumbered,
  readSettled: (table, read, foundNew) => readSettled(sql, table, read, foundNew),
  choose: (forms) => forms.pg()
})

/** The dialect of the service's `SqlClient`. */
export const SqlDialectLive: Layer.Layer<SqlDialect, never, SqlClient.SqlClient> = Layer.effect(
  SqlDialect,
  Effect.map(SqlClient.SqlClient, (sql) => dialectOf(sql) === "pg" ? pgDialect(sql) : sqliteDialect(sql))
)
