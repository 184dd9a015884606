import { Effect, Redacted } from "effect"
import * as Pg from "pg"
import { AppConfig } from "../../src/Config.js"

/**
 * A connection to the test's PostgreSQL database of the test's own, outside the service's pool:
 * to hold a lock as another process would, or to watch the service's connections. Closed with
 * the test's scope.
 */
export const outsideConnection = Effect.acquireRelease(
  Effect.flatMap(AppConfig, (config) =>
    Effect.promise(async () => {
      const client = new Pg.Client({ connectionString: Redacted.value(config.databaseUrl ?? Redacted.make("")) })
      await client.connect()
      return client
    })),
  (client) => Effect.promise(() => client.end())
)

/** Runs one statement on an outside connection. */
export const onOutside = (client: Pg.Client, text: string) => Effect.promise(() => client.query(text))

/**
 * How many of the service's connections wait for a lock right now. Read it on a connection that
 * is in no transaction: inside one, pg_stat_activity keeps its first answer.
 */
export const serviceLockWaiters = (observer: Pg.Client) =>
  Effect.map(
    onOutside(
      observer,
      `SELECT count(*) AS n FROM pg_stat_activity
       WHERE datname = current_database() AND application_name = 'survey-service' AND wait_event_type = 'Lock'`
    ),
    (result) => Number(result.rows[0]?.n ?? -1)
  )
