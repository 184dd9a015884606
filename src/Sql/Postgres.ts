import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient, type SqlConnection, SqlError, Statement } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Metric, Redacted, Schedule, type Scope } from "effect"
import * as Pg from "pg"
import type { AppSettings } from "../Config.js"
import { poolConnections, poolWaiting } from "../Telemetry/Metrics.js"
import { camelToSnake, snakeToCamel } from "./Names.js"
import { pgParsers } from "./PgText.js"
import { ANSWER_GRACE_MS, serviceClient } from "./PgServiceClient.js"

const pgTypes: Pg.CustomTypesConfig = {
  getTypeParser: ((oid: number) => pgParsers[oid] ?? ((value: string) => value)) as Pg.CustomTypesConfig["getTypeParser"]
}

/** Where a PostgreSQL URL points, without its password: for the start-up error. */
const described = (url: string): string => {
  try {
    const parsed = new URL(url)
    return `${parsed.hostname || "localhost"}:${parsed.port || "5432"}${parsed.pathname}`
  } catch {
    return "DATABASE_URL"
  }
}

const reasonOf = (cause: unknown): string => {
  if (cause instanceof Error) {
    const code = "code" in cause && typeof cause.code === "string" ? ` (${cause.code})` : ""
    const message = cause.message || (cause instanceof AggregateError ? cause.errors.map(String).join("; ") : cause.name)
    return `${message}${code}`
  }
  return String(cause)
}

/** How many connections a process keeps to PostgreSQL, and how long a statement waits for one. */
export interface PoolSettings {
  /** At most this many connections at once (`DATABASE_POOL_SIZE`, default 10). */
  readonly size: number
  /**
   * How long a statement or transaction waits for a connection: a free one, or a new one being
   * opened (`DATABASE_POOL_TIMEOUT_MS`, default 5000). Past it the statement fails without having
   * run, and a request answers 503 `service_unavailable`.
   */
  readonly acquireTimeoutMs: number
  /**
   * The server's `statement_timeout` on every connection (`DATABASE_STATEMENT_TIMEOUT_MS`,
   * default 30000), sent in the connection's start-up packet: PostgreSQL itself fails a statement
   * that runs longer, waits for a lock included, and its transaction rolls back on the same
   * connection, which stays usable. Statements are never cancelled from the service
   * (`steady`), so this is what bounds a statement and the request, or the drain, waiting for it;
   * on a connection that went silent, the client gives up `ANSWER_GRACE_MS` later (serviceClient).
   */
  readonly statementTimeoutMs: number
}

export const DEFAULT_POOL: PoolSettings = { size: 10, acquireTimeoutMs: 5000, statementTimeoutMs: 30_000 }

/** The pool settings of the configuration, defaults filled in. */
export const poolSettings = (config: AppSettings): PoolSettings => ({
  size: config.databasePoolSize ?? DEFAULT_POOL.size,
  acquireTimeoutMs: config.databasePoolTimeoutMs ?? DEFAULT_POOL.acquireTimeoutMs,
  statementTimeoutMs: config.databaseStatementTimeoutMs ?? DEFAULT_POOL.statementTimeoutMs
})

/**
 * The pool behind the PostgreSQL client, checked with one statement at start-up: a URL that
 * cannot be reached fails the start with one line naming the host (never the password).
 */
const acquirePool = (url: Redacted.Redacted<string>, settings: PoolSettings) =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => {
        const pool = new Pg.Pool({
          connectionString: Redacted.value(url),
          application_name: "survey-service",
          // pg's pool bounds both waits with this one setting: for a free connection, and for a new one to open.
          connectionTimeoutMillis: settings.acquireTimeoutMs,
          max: settings.size,
          statement_timeout: settings.statementTimeoutMs,
          // Idle connections to a host that went away are noticed by TCP keepalive probes; a
          // statement waiting for an answer is bounded by the client (serviceClient).
          keepAlive: true,
          keepAliveInitialDelayMillis: 10_000,
          types: pgTypes,
          Client: serviceClient(settings.statementTimeoutMs + ANSWER_GRACE_MS)
        })
        // A connection lost while idle: the pool drops it and the next statement opens another.
        pool.on("error", () => {})
        try {
          await pool.query("SELECT 1")
        } catch (cause) {
          await pool.end().catch(() => {})
          throw cause
        }
        return pool
      },
      catch: (cause) =>
        new SqlError.SqlError({
          cause,
          message: `cannot connect to the PostgreSQL database at ${described(Redacted.value(url))}: ${reasonOf(cause)}`
        })
    }),
    (pool) => Effect.promise(() => pool.end()).pipe(Effect.timeoutOption(1000))
  )

const usedConnections = Metric.tagged(poolConnections, "db.client.connection.state", "used")
const idleConnections = Metric.tagged(poolConnections, "db.client.connection.state", "idle")

/**
 * The pool's connections in the service's metrics, read every 5 s while the pool is open: only
 * when an exporter reads them (OTLP or the Prometheus listener).
 */
const watchPool = (pool: Pg.Pool): Effect.Effect<void, never, Scope.Scope> =>
  Effect.asVoid(Effect.forkScoped(Effect.repeat(
    Effect.suspend(() =>
      Effect.all([
        Metric.set(usedConnections, pool.totalCount - pool.idleCount),
        Metric.set(idleConnections, pool.idleCount),
        Metric.set(poolWaiting, pool.waitingCount)
      ], { discard: true })
    ),
    Schedule.spaced("5 seconds")
  )))

/**
 * How the service talks to PostgreSQL at `url` through a pool with `pool`'s settings; `watched`
 * puts the pool's connections in the metrics.
 */
export const pgClientOptions = (
  url: Redacted.Redacted<string>,
  pool: PoolSettings = DEFAULT_POOL,
  watched = false
): PgClient.PgClientFromPoolOptions => ({
  acquire: watched ? Effect.tap(acquirePool(url, pool), watchPool) : acquirePool(url, pool),
  applicationName: "survey-service",
  transformQueryNames: camelToSnake,
  transformResultNames: snakeToCamel,
  transformJson: false,
  types: pgTypes
})

/**
 * A connection whose statements, once sent, run to their end even when the fiber that sent them
 * is interrupted (a client that closed its request, a timeout): the interruption takes effect
 * after the statement, where a transaction then rolls back on its own connection.
 *
 * `@effect/sql-pg` answers the interruption of a statement in flight with
 * `SELECT pg_cancel_backend(pid)` sent through the same pool, and keeps the connection until that
 * statement has run. Under load every connection is taken, often by transactions queued behind a
 * row lock that the interrupted transaction holds (a survey's row, locked by a save's count), so the
 * cancel waited for a connection that could only come free after it: the pool stood still until
 * the library gave up on the cancel after 5 s, and a cancel still queued then could run later
 * against whatever statement that backend served by then, another request's. Completions under sustained
 * load answered nothing at all (docs/operations.md#connections-and-pool). A statement is never cancelled here,
 * so an interrupted request needs no connection beyond its own.
 */
const steady = (connection: SqlConnection.Connection): SqlConnection.Connection => ({
  execute: (sql, params, transformRows) => Effect.uninterruptible(connection.execute(sql, params, transformRows)),
  executeRaw: (sql, params) => Effect.uninterruptible(connection.executeRaw(sql, params)),
  executeValues: (sql, params) => Effect.uninterruptible(connection.executeValues(sql, params)),
  executeUnprepared: (sql, params, transformRows) =>
    Effect.uninterruptible(connection.executeUnprepared(sql, params, transformRows)),
  // A stream's cursor is closed by its scope, which needs no other connection.
  executeStream: (sql, params, transformRows) => connection.executeStream(sql, params, transformRows)
})

/**
 * Refuses a URL that sets `statement_timeout` as a parameter of its own: `pg` lets the URL's
 * parameters override the pool's options, so it would silently replace
 * `DATABASE_STATEMENT_TIMEOUT_MS`, which the service documents as the bound on every statement.
 * (A `-c statement_timeout=…` inside `?options=` is no conflict: the server applies the setting,
 * sent as a start-up parameter of its own, after the options.)
 */
const refuseOverridingUrl = (url: Redacted.Redacted<string>) =>
  Effect.suspend(() => {
    let parameters: URLSearchParams
    try {
      parameters = new URL(Redacted.value(url)).searchParams
    } catch {
      return Effect.void // not a URL: the connection check names it
    }
    return parameters.has("statement_timeout")
      ? Effect.fail(
        new SqlError.SqlError({
          cause: undefined,
          message: "DATABASE_URL sets statement_timeout, which would override DATABASE_STATEMENT_TIMEOUT_MS: " +
            "remove it from the URL and set DATABASE_STATEMENT_TIMEOUT_MS (or --database-statement-timeout-ms) instead"
        })
      )
      : Effect.void
  })

/**
 * The pool of the service's PostgreSQL client, provided beside it by `PgLive`: the request path's
 * reader (src/Sql/Reader.ts) takes a connection from it for a single statement, past the
 * client's acquisition machinery.
 */
export class PgPool extends Context.Tag("Sql/PgPool")<PgPool, Pg.Pool>() {}

/**
 * A PostgreSQL client and its pool: `@effect/sql-pg`'s connections from the pool, each taken for
 * one statement or one transaction and made `steady`. Taking a connection cannot be interrupted
 * either (a connection the pool hands to a fiber that stopped waiting would never go back);
 * it ends when one is free or after the pool's acquire timeout.
 */
export const steadyPgClient = (url: Redacted.Redacted<string>, settings: PoolSettings, watched = false) =>
  Effect.gen(function*() {
    yield* refuseOverridingUrl(url)
    const options = pgClientOptions(url, settings, watched)
    const pool = yield* options.acquire
    const base = yield* PgClient.fromPool({ ...options, acquire: Effect.succeed(pool) })
    const connection = Effect.map(Effect.uninterruptible(base.reserve), steady)
    const client = yield* SqlClient.make({
      acquirer: connection,
      transactionAcquirer: connection,
      compiler: PgClient.makeCompiler(camelToSnake, false),
      transformRows: Statement.defaultTransforms(snakeToCamel, false).array,
      spanAttributes: [["db.system.name", "postgresql"]]
    })
    return { client, pool } as const
  })

/**
 * The PostgreSQL database at `url`: a pool of connections, checked once at start-up, with the
 * client on it and the pool itself (`PgPool`).
 */
export const PgLive = (
  url: Redacted.Redacted<string>,
  pool: PoolSettings,
  watched: boolean
): Layer.Layer<SqlClient.SqlClient | PgPool, Error> =>
  Layer.scopedContext(
    Effect.map(
      steadyPgClient(url, pool, watched),
      ({ client, pool }) => Context.make(SqlClient.SqlClient, client).pipe(Context.add(PgPool, pool))
    )
  ).pipe(
    Layer.provide(Reactivity.layer),
    Layer.mapError((error) => new Error(error.message))
  )
