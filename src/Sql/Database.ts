import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient, SqlError, Statement } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { SqliteClient } from "@effect/sql-sqlite-bun"
import { Context, Duration, Effect, Layer, Redacted, Schedule } from "effect"
import * as Pg from "pg"
import { mkdirSync } from "node:fs"
import { dirname } from "node:path"
import { AppConfig, type AppSettings } from "../Config.js"
import { isSqliteBusy } from "./Busy.js"

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

/**
 * How PostgreSQL values arrive, by type oid (text format). Instants are stored as ISO text
 * (the same strings on both databases), so no date type is parsed; 64-bit integers (sequence
 * numbers, epoch milliseconds, counts and sums) and numerics become numbers, as SQLite gives
 * them; every other type stays the text PostgreSQL sent.
 */
const pgParsers: Record<number, (value: string) => unknown> = {
  16: (value) => value === "t", // bool
  20: Number, // int8
  21: Number, // int2
  23: Number, // int4
  26: Number, // oid
  700: Number, // float4
  701: Number, // float8
  1700: Number // numeric
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

let inFlight = 0

/**
 * How many PostgreSQL statements this process has sent and not yet seen answered. Tests that
 * move a `TestClock` wait for it to reach zero, so that background work has reached its next
 * sleep before the clock moves (on SQLite every statement completes synchronously).
 */
export const statementsInFlight = (): number => inFlight

/** `args` with the statement's callback, if any, counted out of `inFlight` when it is called. */
const counted = (args: Array<unknown>): Array<unknown> => {
  const last = args[args.length - 1]
  if (typeof last !== "function") return args
  let done = false
  inFlight++
  const callback = (...results: Array<unknown>) => {
    if (!done) {
      done = true
      inFlight--
    }
    return Reflect.apply(last, undefined, results)
  }
  return [...args.slice(0, -1), callback]
}

/** A `pg` client whose statements bind their parameters through `bound` and are counted. */
class ServiceClient extends Pg.Client {
  constructor(config?: string | Pg.ClientConfig) {
    super(config)
    const query = this.query.bind(this) as (...args: Array<unknown>) => unknown
    this.query = ((...args: Array<unknown>) => query(...counted(boundArgs(args)))) as Pg.Client["query"]
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

/** How long a new connection may take before the attempt fails (start-up, and when the pool grows). */
const connectTimeout = Duration.seconds(5)

/**
 * The pool behind the PostgreSQL client, checked with one statement at start-up: a URL that
 * cannot be reached fails the start with one line naming the host (never the password).
 */
const acquirePool = (url: Redacted.Redacted<string>, maxConnections: number) =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => {
        const pool = new Pg.Pool({
          connectionString: Redacted.value(url),
          application_name: "survey-service",
          connectionTimeoutMillis: Duration.toMillis(connectTimeout),
          max: maxConnections,
          types: pgTypes,
          Client: ServiceClient
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

/** How the service talks to PostgreSQL at `url`. */
export const pgClientOptions = (url: Redacted.Redacted<string>, maxConnections = 10): PgClient.PgClientFromPoolOptions => ({
  acquire: acquirePool(url, maxConnections),
  applicationName: "survey-service",
  transformQueryNames: camelToSnake,
  transformResultNames: snakeToCamel,
  transformJson: false,
  types: pgTypes
})

/** The PostgreSQL database at `url`: a pool of connections, checked once at start-up. */
const PgLive = (url: Redacted.Redacted<string>) =>
  PgClient.layerFromPool(pgClientOptions(url)).pipe(
    Layer.mapError((error) => new Error(error.message))
  )

/** The database named by the configuration: PostgreSQL when `DATABASE_URL` is set, else the SQLite file. */
export const SqlLive: Layer.Layer<SqlClient.SqlClient, unknown, AppConfig> = Layer.unwrapEffect(
  Effect.map(AppConfig, (config): Layer.Layer<SqlClient.SqlClient, unknown> =>
    config.databaseUrl !== undefined
      ? PgLive(config.databaseUrl)
      : SqliteLive(config.databasePath, busyTimeoutMs(config)))
)
