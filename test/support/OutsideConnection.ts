import { Effect, Fiber, Option, Redacted } from "effect"
import * as Pg from "pg"
import { AppConfig } from "../../src/Config.js"
import { eventually } from "./WebhookReceiver.js"

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

/** Until `fiber` is done or `waiting` of the service's connections wait for a lock (as it would, blocked). */
export const waitingOrDone = <A, E>(observer: Pg.Client, fiber: Fiber.Fiber<A, E>, waiting = 1) =>
  eventually(
    Effect.zip(serviceLockWaiters(observer), Fiber.poll(fiber)),
    ([waiters, done]) => waiters >= waiting || Option.isSome(done)
  )

/**
 * Opens a transaction on `holder` that writes a `response.completed` event of srv_main with id
 * `eventId` and stays open, as a completion's transaction not yet committed: COMMIT it on `holder`.
 */
export const openEventWrite = (holder: Pg.Client, eventId: string) =>
  Effect.zipRight(
    onOutside(holder, "BEGIN"),
    onOutside(
      holder,
      `INSERT INTO events (id, type, workspace_id, survey_id, payload, created_at)
       VALUES ('${eventId}', 'response.completed', 'ws_a', 'srv_main', '{}', '2026-01-01T00:00:00.000Z')`
    )
  )
