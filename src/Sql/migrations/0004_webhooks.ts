import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { ddlOf } from "../Ddl.js"
import { dialectOf } from "../Dialect.js"

/**
 * Webhooks: one endpoint per survey and one per workspace, the deliveries that fan out
 * from the events outbox, and the attempt log (never the payload).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const ddl = ddlOf(sql)
  // survey_id NULL = the workspace webhook. since_seq: events up to it predate the webhook.
  yield* ddl`CREATE TABLE webhooks (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    survey_id TEXT REFERENCES surveys (id),
    target_url TEXT NOT NULL,
    secret TEXT NOT NULL,
    since_seq INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  )`
  yield* ddl`CREATE UNIQUE INDEX webhooks_by_scope ON webhooks (workspace_id, IFNULL(survey_id, ''))`
  // One row per event per webhook; times in epoch milliseconds so the due query compares numbers.
  yield* ddl`CREATE TABLE deliveries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    event_seq INTEGER NOT NULL REFERENCES events (seq),
    event_id TEXT NOT NULL,
    webhook_id TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'given_up')),
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    lease_until INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    UNIQUE (event_seq, webhook_id)
  )`
  yield* ddl`CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE state = 'pending'`
  yield* ddl`CREATE INDEX deliveries_by_webhook ON deliveries (webhook_id, next_attempt_at) WHERE state = 'pending'`
  yield* ddl`CREATE INDEX deliveries_leased ON deliveries (lease_until) WHERE state = 'pending'`
  yield* ddl`CREATE TABLE delivery_attempts (
    id TEXT PRIMARY KEY,
    delivery_id INTEGER,
    scope TEXT NOT NULL CHECK (scope IN ('survey', 'workspace')),
    workspace_id TEXT NOT NULL,
    survey_id TEXT,
    event_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    ok INTEGER NOT NULL,
    response_status INTEGER,
    error TEXT,
    attempted_at INTEGER NOT NULL
  )`
  // Attempts list newest first, ties in insertion order: SQLite's rowid; PostgreSQL has none, so
  // there a column of that name counts the insertions and the statements read the same.
  if (dialectOf(sql) === "pg") {
    yield* sql`ALTER TABLE delivery_attempts ADD COLUMN rowid BIGINT GENERATED ALWAYS AS IDENTITY`
  }
  yield* ddl`CREATE INDEX delivery_attempts_by_workspace ON delivery_attempts (workspace_id, scope, attempted_at)`
  yield* ddl`CREATE INDEX delivery_attempts_by_survey ON delivery_attempts (survey_id, scope, attempted_at)`
  yield* ddl`CREATE INDEX delivery_attempts_by_age ON delivery_attempts (attempted_at)`
  // How far the fan-out has followed the outbox. Starts at the current end: history is not replayed.
  yield* ddl`CREATE TABLE outbox_cursors (
    name TEXT PRIMARY KEY,
    last_seq INTEGER NOT NULL
  )`
  yield* ddl`INSERT INTO outbox_cursors (name, last_seq)
    SELECT 'webhooks', IFNULL(MAX(seq), 0) FROM events`
})
