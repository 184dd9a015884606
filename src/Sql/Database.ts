import type { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { AppConfig } from "../Config.js"
import { PgLive, poolSettings } from "./Postgres.js"
import { busyTimeoutMs, SqliteLive } from "./Sqlite.js"

/**
 * The database named by the configuration: PostgreSQL when `DATABASE_URL` is set (src/Sql/Postgres.ts,
 * which also provides its pool as `PgPool`), else the SQLite file (src/Sql/Sqlite.ts).
 */
export const SqlLive: Layer.Layer<SqlClient.SqlClient, unknown, AppConfig> = Layer.unwrapEffect(
  Effect.map(AppConfig, (config): Layer.Layer<SqlClient.SqlClient, unknown> =>
    config.databaseUrl !== undefined
      ? PgLive(config.databaseUrl, poolSettings(config), config.telemetry !== undefined || config.metrics !== undefined)
      : SqliteLive(config.databasePath, busyTimeoutMs(config)))
)
