import { SqlClient } from "@effect/sql"
import { Duration, Effect, Option } from "effect"
import { migrations } from "./Migrations.js"
import { column, rowShape } from "./Rows.js"

/** Why the database is not ready: it did not answer in time, or a migration this binary knows has not run. */
export type DatabaseNotReady = "database" | "migrations"

/** How long the readiness statement may take before the database counts as not answering (v1-extensions §X6). */
export const READINESS_TIMEOUT = Duration.seconds(1)

/** The ids of the migrations this binary knows: the number before the first `_` of each name. */
const knownIds: ReadonlyArray<number> = Object.keys(migrations).map((name) => Number(name.slice(0, name.indexOf("_"))))

const Applied = rowShape({ migrationId: column.num("migration_id") })

/** How long one readiness answer is reused: probes within it share one statement. */
export const READINESS_REUSE = Duration.seconds(1)

/**
 * The database half of `GET /readyz`: one statement, which also tells whether every migration
 * this binary knows has run (an older binary's database, or one another process is migrating).
 * One check runs at a time, and its answer is reused for `READINESS_REUSE` from its start: probes
 * arriving meanwhile wait for it and share it, so that probes never queue statements up.
 */
export class DatabaseReadiness extends Effect.Service<DatabaseReadiness>()("Sql/DatabaseReadiness", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const applied = sql`SELECT ${sql.literal(Applied.columns)} FROM schema_migrations`.values

    /** None when ready; else why not. Never fails: a failed statement is a database not ready. */
    const checkOnce: Effect.Effect<Option.Option<DatabaseNotReady>> = applied.pipe(
      Effect.map((rows) => {
        const ran = new Set(rows.map(Applied.at.migrationId))
        return knownIds.every((id) => ran.has(id)) ? Option.none() : Option.some<DatabaseNotReady>("migrations")
      }),
      // Disconnected, so that the timeout answers at once even while a statement cannot be interrupted.
      Effect.disconnect,
      Effect.timeoutOption(READINESS_TIMEOUT),
      Effect.map(Option.getOrElse(() => Option.some<DatabaseNotReady>("database"))),
      Effect.catchAllCause(() => Effect.succeed(Option.some<DatabaseNotReady>("database"))),
      Effect.withSpan("DatabaseReadiness.check")
    )
    // Uninterruptible: a probe whose client went away still completes the check the others wait for.
    const shared = yield* Effect.cachedWithTTL(checkOnce, READINESS_REUSE)
    const check = Effect.uninterruptible(shared)

    return { check } as const
  })
}) {}
