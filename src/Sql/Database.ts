import { SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-bun"
import { Effect, Layer } from "effect"
import { mkdirSync } from "node:fs"
import { dirname } from "node:path"
import { AppConfig, type AppSettings } from "../Config.js"

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

/** The SQLite file named by the configuration, with the service's pragmas applied. */
export const SqlLive = Layer.unwrapEffect(
  Effect.gen(function*() {
    const config = yield* AppConfig
    if (config.databasePath !== ":memory:") {
      mkdirSync(dirname(config.databasePath), { recursive: true })
    }
    return Layer.effectDiscard(pragmas(busyTimeoutMs(config))).pipe(
      Layer.provideMerge(
        SqliteClient.layer({
          filename: config.databasePath,
          transformQueryNames: camelToSnake,
          transformResultNames: snakeToCamel
        })
      )
    )
  })
)
