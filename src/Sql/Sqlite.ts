import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient, Statement } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-bun"
import { Context, Effect, Layer, Schedule } from "effect"
import { mkdirSync } from "node:fs"
import { dirname } from "node:path"
import type { AppSettings } from "../Config.js"
import { isSqliteBusy } from "./Busy.js"
import { camelToSnake, snakeToCamel } from "./Names.js"

/** How long a statement waits for another connection's lock before answering busy (default 5 s). */
export const busyTimeoutMs = (config: AppSettings): number => config.sqliteBusyTimeoutMs ?? 5000

/** The pragma that makes a connection wait up to `ms` for another connection's lock. */
export const busyTimeoutPragma = (ms: number): string => `PRAGMA busy_timeout = ${Math.max(0, Math.trunc(ms))}`

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
  yield* sql.unsafe(busyTimeoutPragma(busyTimeoutMs))
  yield* sql.unsafe("PRAGMA temp_store = MEMORY")
})

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

/** The SQLite file at `path` (or an in-memory database), with the service's pragmas applied. */
export const SqliteLive = (path: string, busyTimeoutMs: number): Layer.Layer<SqlClient.SqlClient, unknown> => {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true })
  return Layer.effectDiscard(pragmas(busyTimeoutMs)).pipe(
    Layer.provideMerge(
      Layer.scopedContext(Effect.map(immediateClient(path), (client) => Context.make(SqlClient.SqlClient, client)))
    ),
    Layer.provide(Reactivity.layer)
  )
}

/**
 * A read-only client of its own on the existing SQLite file at `path` (the request path's reader,
 * the CSV export): in WAL mode its reads never wait for the writer, and see the latest commit.
 */
export const readOnlySqlite = (path: string, busyTimeoutMs: number) =>
  Effect.gen(function*() {
    const client = yield* SqliteClient.make({
      filename: path,
      create: false,
      disableWAL: true,
      transformQueryNames: camelToSnake,
      transformResultNames: snakeToCamel
    })
    yield* client.unsafe("PRAGMA query_only = 1")
    yield* client.unsafe(busyTimeoutPragma(busyTimeoutMs))
    return client
  }).pipe(Effect.provide(Reactivity.layer))
