import { SqlClient, type SqlConnection, SqlError } from "@effect/sql"
import { Effect, Option } from "effect"
import type * as Pg from "pg"
import { AppConfig } from "../Config.js"
import { dialectOf, toNumbered } from "./Dialect.js"
import { PgPool } from "./Postgres.js"
import { busyTimeoutMs, readOnlySqlite } from "./Sqlite.js"

export type ValueRows = ReadonlyArray<ReadonlyArray<unknown>>

/** The parenthesised list of an `IN` over `count` values: `(?, ?, …)`, or `(NULL)` (matching nothing) for none. */
export const placeholders = (count: number): string =>
  count === 0 ? "(NULL)" : `(${Array.from({ length: count }, () => "?").join(", ")})`

/**
 * Single-statement reads on the request path, on a read-only connection of their own.
 *
 * A statement through the shared client acquires the one connection for itself (a permit, a
 * scope, a span, the statement compiled from its template) so that it never runs inside another
 * fiber's open transaction; under load that machinery cost more than the query
 * (docs/architecture.md#the-readers-own-connection). A second connection cannot see another connection's uncommitted
 * writes, and in WAL mode each statement reads the latest committed state, so these reads
 * need none of it: the statement text is fixed and the connection is held for the service's life.
 *
 * Inside a transaction a read goes to the transaction's connection, so a write path still reads
 * its own writes. An in-memory database cannot be opened twice: there every read takes the
 * shared connection as a statement would.
 *
 * On PostgreSQL a statement outside a transaction takes a connection from the client's pool
 * (`PgPool`, which src/Sql/Postgres.ts provides beside the client) itself, runs, and gives it
 * back (`pooled`): the same pool, the same bound on waiting for a connection, the same errors,
 * without the client's acquisition machinery; inside a transaction
 * it runs on the transaction's connection. The texts' `?` placeholders are numbered as PostgreSQL
 * expects.
 */
type Run = (text: string, params: ReadonlyArray<unknown>) => Effect.Effect<ValueRows, SqlError.SqlError>

// With telemetry exported, each statement is a span as the client's own statements are; without,
// the request path does not even build one.
const spanned = (run: Run, system: string): Run => (text, params) =>
  run(text, params).pipe(
    Effect.withSpan("sql.execute", {
      kind: "client",
      captureStackTrace: false,
      attributes: { "db.system.name": system, "db.query.text": text }
    })
  )

/**
 * Measured shortcut (docs/architecture.md#the-readers-own-connection): one statement on a
 * connection of `pool`, taken and given back around it, failing as `@effect/sql-pg` fails (the
 * same messages, so src/Sql/Busy.ts reads them alike). Once sent, a statement runs to its end
 * even when the fiber waiting for it is interrupted, as every statement of the service does
 * (src/Sql/Postgres.ts `steady`): the connection goes back to the pool when the answer arrives.
 * The pool's connections prepare it (src/Sql/PgServiceClient.ts `serviceClient`).
 */
const pooled = (
  pool: Pg.Pool,
  text: string,
  params: ReadonlyArray<unknown>
): Effect.Effect<ValueRows, SqlError.SqlError> =>
  Effect.async<ValueRows, SqlError.SqlError>((resume) => {
    pool.connect((cause, client, release) => {
      if (cause !== undefined && cause !== null) {
        return resume(Effect.fail(new SqlError.SqlError({ cause, message: "Failed to acquire connection" })))
      }
      if (client === undefined) {
        return resume(
          Effect.fail(new SqlError.SqlError({ cause: new Error("No client returned"), message: "Failed to acquire connection" }))
        )
      }
      let done = false
      const lost = (error: Error) => {
        if (done) return
        done = true
        release(error)
        resume(Effect.fail(new SqlError.SqlError({ cause: error, message: "Connection error" })))
      }
      client.once("error", lost)
      client.query({ text, values: [...params], rowMode: "array" }, (error, result) => {
        client.off("error", lost)
        if (done) return
        done = true
        release()
        resume(
          error === null || error === undefined
            ? Effect.succeed(result.rows)
            : Effect.fail(new SqlError.SqlError({ cause: error, message: "Failed to execute statement" }))
        )
      })
    })
  })

export class Reader extends Effect.Service<Reader>()("Sql/Reader", {
  scoped: Effect.gen(function*() {
    const config = yield* AppConfig
    const shared = yield* SqlClient.SqlClient

    if (dialectOf(shared) === "pg") {
      // Provided by the service's PostgreSQL layer; a client made elsewhere reads through itself.
      const pool = Option.getOrUndefined(yield* Effect.serviceOption(PgPool))
      const run = (text: string, params: ReadonlyArray<unknown>): Effect.Effect<ValueRows, SqlError.SqlError> =>
        Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (transaction) => {
          const numbered = toNumbered(text)
          if (Option.isSome(transaction)) return transaction.value[0].executeValues(numbered, params)
          return pool === undefined ? shared.unsafe(numbered, params).values : pooled(pool, numbered, params)
        })
      return { values: config.telemetry === undefined ? run : spanned(run, "postgresql") } as const
    }

    const own: Option.Option<SqlConnection.Connection> = config.databasePath === ":memory:"
      ? Option.none()
      : Option.some(
        // Held until shutdown: nothing else uses this client.
        yield* Effect.flatMap(readOnlySqlite(config.databasePath, busyTimeoutMs(config)), (client) => client.reserve).pipe(
          Effect.orDie
        )
      )

    const onShared = (text: string, params: ReadonlyArray<unknown>) =>
      Effect.scoped(Effect.flatMap(shared.reserve, (connection) => connection.executeValues(text, params)))

    /** The rows of one statement as arrays of column values, in the statement's column order. */
    const run = (text: string, params: ReadonlyArray<unknown>): Effect.Effect<ValueRows, SqlError.SqlError> =>
      Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (transaction) => {
        if (Option.isSome(transaction)) return transaction.value[0].executeValues(text, params)
        return Option.isSome(own) ? own.value.executeValues(text, params) : onShared(text, params)
      })

    return { values: config.telemetry === undefined ? run : spanned(run, "sqlite") } as const
  })
}) {}
