import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient, type SqlConnection, SqlError, Statement } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { SqliteClient } from "@effect/sql-sqlite-bun"
import { Context, Effect, Layer, Metric, Redacted, Schedule, type Scope } from "effect"
import * as Pg from "pg"
import { mkdirSync } from "node:fs"
import { dirname } from "node:path"
import { AppConfig, type AppSettings } from "../Config.js"
import { poolConnections, poolWaiting } from "../Telemetry/Metrics.js"
import { isSqliteBusy, isStalePlan } from "./Busy.js"
import { LIFT_STATEMENT_TIMEOUT } from "./Dialect.js"
import { pgParsers } from "./PgText.js"

/**
 * A name transform remembered per name: the client renames every column of every row it reads,
 * and a service only ever uses a few hundred distinct names, so each is computed once.
 */
const memoized = (transform: (name: string) => string) => {
  const known = new Map<string, string>()
  return (name: string): string => {
    let found = known.get(name)
    if (found === undefined) {
      found = transform(name)
      if (known.size < 10_000) known.set(name, found)
    }
    return found
  }
}

const camelToSnake = memoized((name) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`))
const snakeToCamel = memoized((name) => name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase()))

const pragmas = (busyTimeoutMs: number) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // 8 KiB pages for a new database (an existing one keeps its page size; WAL fixes it at creation,
  // so the client opens without WAL and it is set here, after). A response row with its rendered
  // answers (about 1 KB) often spilled to an overflow page on 4 KiB pages, where a row of the
  // clustered responses table holds at most about 1,000 bytes in place; a page then reads about
  // half as many pages, which matters most right after a commit by any connection, when SQLite
  // drops the other connections' cached pages (docs/architecture.md#storage-of-responses).
  yield* sql.unsafe("PRAGMA page_size = 8192")
  yield* sql.unsafe("PRAGMA journal_mode = WAL")
  // WAL with synchronous=NORMAL stays crash-safe (a power cut may lose the last commits, never corrupt).
  yield* sql.unsafe("PRAGMA synchronous = NORMAL")
  yield* sql.unsafe("PRAGMA foreign_keys = ON")
  // Wait for another process (the CLI, a second server) before answering SQLITE_BUSY.
  yield* sql.unsafe(`PRAGMA busy_timeout = ${Math.max(0, Math.trunc(busyTimeoutMs))}`)
  yield* sql.unsafe("PRAGMA temp_store = MEMORY")
})

/** How long a statement waits for another connection's lock before answering busy (default 5 s). */
export const busyTimeoutMs = (config: AppSettings): number => config.sqliteBusyTimeoutMs ?? 5000

/**
 * A transaction that found the write lock still taken after the busy timeout wrote nothing (it
 * failed at `BEGIN IMMEDIATE`), so it is tried again before the caller sees it; each try waits up
 * to the busy timeout inside SQLite.
 */
const busyRetry = Schedule.recurs(2)

/**
 * The SQLite client with write transactions that take the database's write lock when they
 * begin (`BEGIN IMMEDIATE`). A plain `BEGIN` takes it at the first write, and when another
 * process committed since the transaction's first read, SQLite refuses that upgrade at once,
 * whatever the busy timeout: two processes on one file then answered "database is locked"
 * under moderate load. Taking the lock first makes every transaction wait its turn instead
 * (for up to the busy timeout, then a few retries), and its reads see the latest commit.
 */
const immediateClient = (filename: string) =>
  Effect.gen(function*() {
    const base = yield* SqliteClient.make({
      filename,
      disableWAL: true,
      transformQueryNames: camelToSnake,
      transformResultNames: snakeToCamel
    })
    const client = yield* SqlClient.make({
      // The base client's one connection, behind its permit: held for a statement, or for a transaction.
      acquirer: Effect.scoped(base.reserve),
      transactionAcquirer: base.reserve,
      compiler: Statement.makeCompilerSqlite(camelToSnake),
      transformRows: Statement.defaultTransforms(snakeToCamel).array,
      spanAttributes: [["db.system.name", "sqlite"]],
      beginTransaction: "BEGIN IMMEDIATE"
    })
    const withTransaction = client.withTransaction
    return Object.assign(client, {
      withTransaction: <A, E, R>(effect: Effect.Effect<A, E, R>) =>
        Effect.retry(withTransaction(effect), { schedule: busyRetry, while: isSqliteBusy })
    })
  })

/** The SQLite file named by the configuration, with the service's pragmas applied. */
const SqliteLive = (path: string, busyTimeoutMs: number) => {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true })
  return Layer.effectDiscard(pragmas(busyTimeoutMs)).pipe(
    Layer.provideMerge(
      Layer.scopedContext(Effect.map(immediateClient(path), (client) => Context.make(SqlClient.SqlClient, client)))
    ),
    Layer.provide(Reactivity.layer)
  )
}

const pgTypes: Pg.CustomTypesConfig = {
  getTypeParser: ((oid: number) => pgParsers[oid] ?? ((value: string) => value)) as Pg.CustomTypesConfig["getTypeParser"]
}

/**
 * A parameter as PostgreSQL can take it. A boolean is bound as SQLite binds it, 1 or 0: flags are
 * integer columns on both databases (src/Sql/Ddl.ts), and the repositories pass booleans for them.
 * PostgreSQL text cannot hold U+0000: in a string it becomes U+FFFD, so a lookup by such a value
 * finds nothing (as on SQLite, where no stored id holds one) instead of failing the statement.
 */
const boundValue = (value: unknown): unknown => {
  if (typeof value === "boolean") return value ? 1 : 0
  if (typeof value === "string" && value.includes("\u0000")) return value.replaceAll("\u0000", "\uFFFD")
  return value
}

const bound = (values: unknown): unknown => (Array.isArray(values) ? values.map(boundValue) : values)

const boundArgs = (args: Array<unknown>): Array<unknown> => {
  const [first, second] = args
  if (typeof first === "object" && first !== null && "values" in first) return [{ ...first, values: bound(first.values) }, ...args.slice(1)]
  if (Array.isArray(second)) return [first, bound(second), ...args.slice(2)]
  return args
}

/**
 * How long the client waits for the answer to a statement before it takes the connection for
 * dead: the server's own timeout, plus `ANSWER_GRACE_MS` for the answer to arrive.
 */
export const ANSWER_GRACE_MS = 5000

/** The error a statement fails with when its connection gave no answer in time (read as "database unavailable"). */
const noAnswer = (ms: number) =>
  Object.assign(new Error(`Connection terminated: no answer from PostgreSQL within ${ms} ms`), { code: "ETIMEDOUT" })

/**
 * The names under which a pool's connections prepare statement texts (`parameterised`): each is
 * parsed and planned once per connection instead of at every run. A text is named the second
 * time it is sent (a statement run once, an import's odd-sized last batch, is not worth a
 * prepared statement on every connection), and past `MAX_NAMED` texts the rest run unnamed, so
 * the server's memory per connection stays bounded.
 */
export const MAX_NAMED = 512

const statementNames = () => {
  // Texts seen once (undefined) or named; texts seen once are remembered up to a bound of their own.
  const seen = new Map<string, string | undefined>()
  let named = 0
  return (text: string): string | undefined => {
    const known = seen.get(text)
    if (known !== undefined) return known
    if (!seen.has(text)) {
      if (seen.size - named < MAX_NAMED * 4) seen.set(text, undefined)
      return undefined
    }
    if (named >= MAX_NAMED) return undefined
    const name = `s${++named}`
    seen.set(text, name)
    return name
  }
}

type Callback = (error: unknown, result: unknown) => void

/**
 * A statement to prepare, as the client was asked to run it, its parameters bound (`boundValue`),
 * in a configuration of its own, and its callback; else undefined. A text with parameters, or one
 * sent as a query object (the reader's reads and the client's rows as arrays, always one
 * statement each, parameters or not). A text without parameters sent as a string keeps the simple
 * protocol, which allows several statements in one text (a migration).
 */
const parameterised = (args: Array<unknown>): { readonly config: Pg.QueryConfig; readonly callback: Callback } | undefined => {
  const [first, second, third] = args
  if (typeof first === "string" && Array.isArray(second) && second.length > 0 && typeof third === "function") {
    return { config: { text: first, values: second.map(boundValue) }, callback: third as Callback }
  }
  if (
    typeof first === "object" && first !== null && Object.getPrototypeOf(first) === Object.prototype &&
    "text" in first && typeof first.text === "string" && !("name" in first) &&
    "values" in first && Array.isArray(first.values) && typeof second === "function"
  ) {
    return { config: { ...first, text: first.text, values: first.values.map(boundValue) }, callback: second as Callback }
  }
  return undefined
}

/**
 * `pg` clients whose statements bind their parameters through `bound`, run prepared, and get an
 * answer within `answerWithinMs` or lose their connection.
 *
 * - **Prepared.** A statement to prepare (`parameterised`) runs under its text's name
 *   (`statementNames`, one table per pool). When a migration changed a column's type under a prepared statement
 *   (`isStalePlan`), the connection prepares every text again under new names; a statement outside
 *   a transaction is then sent again at once, while one inside a transaction fails it (the
 *   transaction is aborted, and the request answers 503 and may be retried).
 * - **Answered in time.** A server that stopped answering without closing the connection (a
 *   frozen host or process, a network path that drops packets) otherwise leaves a statement
 *   waiting until TCP gives up, many minutes later; its own `statement_timeout` cannot end it,
 *   since the answer would not arrive either. Destroying the socket fails the statement as a lost
 *   connection (503), and the pool drops the connection.
 */
const serviceClient = (answerWithinMs: number) => {
  const nameOf = statementNames()
  return class ServiceClient extends Pg.Client {
    /** In a transaction that lifted the statement timeout: no bound until it ends. */
    private unbounded = false
    /** Between `BEGIN` and its `COMMIT` or `ROLLBACK`. */
    private inTransaction = false
    /** Raised when a prepared statement went stale: this connection's names are prepared anew. */
    private generation = 0

    constructor(config?: string | Pg.ClientConfig) {
      super(config)
      // An error after the connection was given up (its socket destroyed) has no listener left to take it.
      this.on("error", () => {})
      const query = this.query.bind(this) as (...args: Array<unknown>) => unknown
      const send = (args: Array<unknown>, callback: Callback) => {
        if (this.unbounded) return query(...args, callback)
        const timer = setTimeout(() => this.connection.stream.destroy(noAnswer(answerWithinMs)), answerWithinMs)
        return query(...args, (error: unknown, result: unknown) => {
          clearTimeout(timer)
          callback(error, result)
        })
      }
      // `config` is the statement's own (`parameterised`), and pg copies it when the statement is sent:
      // naming it in place costs no further copy.
      const prepared = (config: Pg.QueryConfig, callback: Callback, retried: boolean): unknown => {
        const name = nameOf(config.text)
        if (name === undefined) return send([config], callback)
        config.name = this.generation === 0 ? name : `${name}_${this.generation}`
        return send([config], (error, result) => {
          if (!isStalePlan(error)) return callback(error, result)
          this.generation++
          if (this.inTransaction || retried) return callback(error, result)
          prepared(config, callback, true)
        })
      }
      this.query = ((...args: Array<unknown>) => {
        const statement = parameterised(args)
        if (statement !== undefined) return prepared(statement.config, statement.callback, false)
        const bound = boundArgs(args)
        const text = typeof bound[0] === "string" ? bound[0] : undefined
        if (text === LIFT_STATEMENT_TIMEOUT) this.unbounded = true
        else if (text === "COMMIT" || text === "ROLLBACK") this.unbounded = this.inTransaction = false
        else if (text !== undefined && text.startsWith("BEGIN")) this.inTransaction = true
        const callback = bound[bound.length - 1]
        if (typeof callback !== "function") return query(...bound)
        return send(bound.slice(0, -1), callback as Callback)
      }) as Pg.Client["query"]
    }
  }
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
 * The PostgreSQL client: `@effect/sql-pg`'s connections from the pool, each taken for one
 * statement or one transaction and made `steady`. Taking a connection cannot be interrupted
 * either (a connection the pool hands to a fiber that stopped waiting would never go back);
 * it ends when one is free or after the pool's acquire timeout.
 */
const steadyPgClient = (url: Redacted.Redacted<string>, settings: PoolSettings, watched = false) =>
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
    poolOfClient.set(client, pool)
    return client
  })

const poolOfClient = new WeakMap<SqlClient.SqlClient, Pg.Pool>()

/** The pool behind a PostgreSQL client of the service (src/Sql/Reader.ts runs its reads on it). */
export const pgPoolOf = (client: SqlClient.SqlClient): Pg.Pool | undefined => poolOfClient.get(client)

/** The PostgreSQL database at `url`: a pool of connections, checked once at start-up. */
const PgLive = (url: Redacted.Redacted<string>, pool: PoolSettings, watched: boolean) =>
  Layer.scopedContext(Effect.map(steadyPgClient(url, pool, watched), (client) => Context.make(SqlClient.SqlClient, client))).pipe(
    Layer.provide(Reactivity.layer),
    Layer.mapError((error) => new Error(error.message))
  )

/** The database named by the configuration: PostgreSQL when `DATABASE_URL` is set, else the SQLite file. */
export const SqlLive: Layer.Layer<SqlClient.SqlClient, unknown, AppConfig> = Layer.unwrapEffect(
  Effect.map(AppConfig, (config): Layer.Layer<SqlClient.SqlClient, unknown> =>
    config.databaseUrl !== undefined
      ? PgLive(config.databaseUrl, poolSettings(config), config.telemetry !== undefined || config.metrics !== undefined)
      : SqliteLive(config.databasePath, busyTimeoutMs(config)))
)

/**
 * The CSV export's own database client, so that saves, the delivery worker and the quota never
 * wait behind an export's pages. On PostgreSQL a pool of its own, as large as the process's export
 * bound (`EXPORT_CONCURRENCY`), whose connections start with `statement_timeout` =
 * `EXPORT_PAGE_TIMEOUT_MS`: a page that takes longer fails and ends its export. On SQLite a
 * read-only connection of its own (WAL readers never block the writer), which bun:sqlite runs
 * synchronously: a page cannot be stopped midway, and a page of 1000 rows bounds it instead. An
 * in-memory database cannot be opened twice: there the export reads through the shared client.
 */
export class ExportSql extends Context.Tag("Sql/ExportSql")<ExportSql, SqlClient.SqlClient>() {}

/** The export's page timeout on PostgreSQL when `EXPORT_PAGE_TIMEOUT_MS` is not set. */
export const DEFAULT_EXPORT_PAGE_TIMEOUT_MS = 10_000

/** Exports a process streams at once when `EXPORT_CONCURRENCY` is not set. */
export const DEFAULT_EXPORT_CONCURRENCY = 4

/** The bound on a process's concurrent exports: also the size of PostgreSQL's export pool. */
export const exportConcurrency = (config: AppSettings): number => config.exportConcurrency ?? DEFAULT_EXPORT_CONCURRENCY

export const ExportSqlLive: Layer.Layer<ExportSql, unknown, AppConfig | SqlClient.SqlClient> = Layer.scoped(
  ExportSql,
  Effect.gen(function*() {
    const config = yield* AppConfig
    const shared = yield* SqlClient.SqlClient
    if (config.databaseUrl !== undefined) {
      return yield* steadyPgClient(config.databaseUrl, {
        ...poolSettings(config),
        size: exportConcurrency(config),
        statementTimeoutMs: config.exportPageTimeoutMs ?? DEFAULT_EXPORT_PAGE_TIMEOUT_MS
      })
    }
    if (config.databasePath === ":memory:") return shared
    const client = yield* SqliteClient.make({
      filename: config.databasePath,
      create: false,
      disableWAL: true,
      transformQueryNames: camelToSnake,
      transformResultNames: snakeToCamel
    })
    yield* client.unsafe("PRAGMA query_only = 1")
    yield* client.unsafe(`PRAGMA busy_timeout = ${Math.max(0, Math.trunc(busyTimeoutMs(config)))}`)
    return client
  }).pipe(Effect.provide(Reactivity.layer))
)
