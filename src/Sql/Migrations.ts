import { Migrator, SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { LIFT_STATEMENT_TIMEOUT } from "./Dialect.js"
import Foundation from "./migrations/0001_foundation.js"
import Events from "./migrations/0002_events.js"
import Respondents from "./migrations/0003_respondents.js"
import Webhooks from "./migrations/0004_webhooks.js"
import Analytics from "./migrations/0005_analytics.js"
import Quota from "./migrations/0006_quota.js"
import AccessGeneration from "./migrations/0007_access_generation.js"
import ResponseDocuments from "./migrations/0009_response_documents.js"
import WebhookOperations from "./migrations/0010_webhook_operations.js"
import SyncAndErasure from "./migrations/0011_sync_and_erasure.js"
import ProcessLeases from "./migrations/0012_process_leases.js"
import QuotaFile from "./migrations/0013_quota_file.js"
import RoundIndexes from "./migrations/0014_round_indexes.js"
import RespondentTokenKey from "./migrations/0015_respondent_token_key.js"
import SealedIdempotentAnswers from "./migrations/0016_sealed_idempotent_answers.js"
import ClockMark from "./migrations/0017_clock_mark.js"
import WebhookRotationRate from "./migrations/0018_webhook_rotation_rate.js"
import Authoring from "./migrations/0019_authoring.js"
import AnalyticsRebuilds from "./migrations/0020_analytics_rebuilds.js"

/**
 * Every migration, in order. Each feature adds its own file under `migrations/`
 * and one line here; ids never change once released.
 */
export const migrations: Record<string, Effect.Effect<void, unknown, SqlClient.SqlClient>> = {
  "0001_foundation": Foundation,
  "0002_events": Events,
  "0003_respondents": Respondents,
  "0004_webhooks": Webhooks,
  "0005_analytics": Analytics,
  "0006_quota": Quota,
  "0007_access_generation": AccessGeneration,
  "0009_response_documents": ResponseDocuments,
  "0010_webhook_operations": WebhookOperations,
  "0011_sync_and_erasure": SyncAndErasure,
  "0012_process_leases": ProcessLeases,
  "0013_quota_file": QuotaFile,
  "0014_round_indexes": RoundIndexes,
  "0015_respondent_token_key": RespondentTokenKey,
  "0016_sealed_idempotent_answers": SealedIdempotentAnswers,
  "0017_clock_mark": ClockMark,
  "0018_webhook_rotation_rate": WebhookRotationRate,
  "0019_authoring": Authoring,
  "0020_analytics_rebuilds": AnalyticsRebuilds
}

/**
 * On PostgreSQL a migration may take longer than the pool's statement timeout (a backfill of a
 * large table): it lifts the timeout for the rest of the migrations' one transaction.
 */
const unbounded = (migration: Effect.Effect<void, unknown, SqlClient.SqlClient>): Effect.Effect<void, unknown, SqlClient.SqlClient> =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.zipRight(
      sql.onDialectOrElse({ pg: () => Effect.asVoid(sql.unsafe(LIFT_STATEMENT_TIMEOUT)), orElse: () => Effect.void }),
      migration
    ))

const unboundedMigrations: Record<string, Effect.Effect<void, unknown, SqlClient.SqlClient>> = Object.fromEntries(
  Object.entries(migrations).map(([id, migration]) => [id, unbounded(migration)])
)

export const runMigrations = Migrator.make({})({
  loader: Migrator.fromRecord(unboundedMigrations),
  table: "schema_migrations"
})

/** Runs pending migrations when the layer is built. */
export const MigrationsLive = Layer.effectDiscard(
  runMigrations.pipe(Effect.withSpan("Sql.migrate"), Effect.orDie)
)
