import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { AppConfig, type AppSettings } from "../Config.js"
import { poolSettings, steadyPgClient } from "./Postgres.js"
import { busyTimeoutMs, readOnlySqlite } from "./Sqlite.js"

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
      const { client } = yield* steadyPgClient(config.databaseUrl, {
        ...poolSettings(config),
        size: exportConcurrency(config),
        statementTimeoutMs: config.exportPageTimeoutMs ?? DEFAULT_EXPORT_PAGE_TIMEOUT_MS
      })
      return client
    }
    if (config.databasePath === ":memory:") return shared
    return yield* readOnlySqlite(config.databasePath, busyTimeoutMs(config))
  }).pipe(Effect.provide(Reactivity.layer))
)
