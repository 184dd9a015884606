import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { ddlOf } from "../Ddl.js"

/**
 * Webhook operations (v1-extensions §X1): the event types each webhook receives, why a webhook
 * was switched off and since when it has been failing, and the indexes that redelivery, the
 * recovery of a time window and the 30-day event retention read by.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const ddl = ddlOf(sql)
  // NULL = enabled. failing_since: the first failed attempt with no success after it (epoch ms).
  yield* ddl`ALTER TABLE webhooks ADD COLUMN disabled_reason TEXT CHECK (disabled_reason IN ('gone', 'failing'))`
  yield* ddl`ALTER TABLE webhooks ADD COLUMN failing_since INTEGER`
  yield* ddl`CREATE TABLE webhook_event_types (
    webhook_id TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_type TEXT NOT NULL,
    PRIMARY KEY (webhook_id, event_type)
  )`
  // Webhooks registered before filters existed receive the v1 set, as they did.
  for (const type of ["response.completed", "survey.published", "survey.closed"]) {
    yield* sql`INSERT INTO webhook_event_types (webhook_id, event_type) SELECT id, CAST(${type} AS TEXT) FROM webhooks`
  }
  yield* ddl`CREATE INDEX events_by_workspace_time ON events (workspace_id, created_at)`
  yield* ddl`CREATE INDEX events_by_survey_time ON events (survey_id, created_at)`
  yield* ddl`CREATE INDEX events_by_time ON events (created_at)`
  yield* ddl`CREATE INDEX delivery_attempts_by_event ON delivery_attempts (event_id)`
})
