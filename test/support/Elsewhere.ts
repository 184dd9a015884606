import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Database } from "bun:sqlite"
import { Effect } from "effect"
import { AppConfig } from "../../src/Config.js"
import { quotaFilePath } from "../../src/Quota/QuotaFileSql.js"
import { DEFAULT_POOL, pgClientOptions } from "../../src/Sql/Postgres.js"

/**
 * Runs `statements` on the test's database over a connection of its own, as the operator CLI,
 * a second process or a hand edit would: not through the service's client. On SQLite a second
 * handle on the file, on PostgreSQL a second client of the same database.
 */
export const elsewhere = (...statements: ReadonlyArray<string>) =>
  Effect.flatMap(AppConfig, (config) => {
    const url = config.databaseUrl
    if (url !== undefined) {
      return Effect.flatMap(SqlClient.SqlClient, (sql) => Effect.forEach(statements, (s) => sql.unsafe(s), { discard: true })).pipe(
        Effect.provide(PgClient.layerFromPool(pgClientOptions(url, { ...DEFAULT_POOL, size: 1 }))),
        Effect.orDie
      )
    }
    return Effect.sync(() => {
      const db = new Database(config.databasePath)
      try {
        db.exec("PRAGMA busy_timeout = 5000")
        for (const statement of statements) db.run(statement)
      } finally {
        db.close()
      }
    })
  })

const camel = (name: string) => name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase())

/**
 * The rows of one query on the test's database over a connection of its own (see `elsewhere`),
 * column names in camelCase as the service's client gives them (write aliases in snake_case).
 */
export const elsewhereRows = (statement: string) => rowsElsewhere(statement, (path) => path)

/**
 * `elsewhereRows` on the request quota's tables: on SQLite in the quota file beside the database
 * file (src/Quota/QuotaFileSql.ts), on PostgreSQL in the database.
 */
export const quotaRowsElsewhere = (statement: string) => rowsElsewhere(statement, quotaFilePath)

const rowsElsewhere = (statement: string, fileOf: (databasePath: string) => string) =>
  Effect.flatMap(AppConfig, (config): Effect.Effect<ReadonlyArray<Record<string, unknown>>> => {
    const url = config.databaseUrl
    if (url !== undefined) {
      return Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<Record<string, unknown>>(statement)).pipe(
        Effect.provide(PgClient.layerFromPool(pgClientOptions(url, { ...DEFAULT_POOL, size: 1 }))),
        Effect.orDie
      )
    }
    return Effect.sync(() => {
      const db = new Database(fileOf(config.databasePath), { readonly: true })
      try {
        return db.query<Record<string, unknown>, []>(statement).all().map((row) =>
          Object.fromEntries(Object.entries(row).map(([key, value]) => [camel(key), value]))
        )
      } finally {
        db.close()
      }
    })
  })
