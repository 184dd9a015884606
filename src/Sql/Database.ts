import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient, Statement } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-bun"
import { Context, Effect, Layer, Schedule } from "effect"
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
export const SqlLive = Layer.unwrapEffect(
  Effect.gen(function*() {
    const config = yield* AppConfig
    if (config.databasePath !== ":memory:") {
      mkdirSync(dirname(config.databasePath), { recursive: true })
    }
    return Layer.effectDiscard(pragmas(busyTimeoutMs(config))).pipe(
      Layer.provideMerge(
        Layer.scopedContext(Effect.map(immediateClient(config.databasePath), (client) => Context.make(SqlClient.SqlClient, client)))
      ),
      Layer.provide(Reactivity.layer)
    )
  })
)
