import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { ddlOf } from "../Ddl.js"

/** The event outbox: written in the same transaction as the change that causes the event. */
export default Effect.gen(function*() {
  const ddl = ddlOf(yield* SqlClient.SqlClient)
  yield* ddl`CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    type TEXT NOT NULL,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    survey_id TEXT,
    payload TEXT NOT NULL,
    created_at TEXT NOT NULL
  )`
  yield* ddl`CREATE INDEX events_by_survey ON events (survey_id, seq)`
})
