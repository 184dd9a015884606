import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { ddlOf } from "../Ddl.js"

/**
 * A survey's analytics are rebuilt in the background, in short transactions, while its former
 * counters keep answering (docs/architecture.md#analytics-rebuilds). One row per survey that was
 * ever rebuilt: the generation being built (`generation`, into counters kept under a survey id of
 * their own until done) and the one the answered counters belong to (`live_generation`), whether
 * a rebuild is under way, the question layout it builds for, and how far its walk over the
 * survey's responses went (`after_created_at`, `after_id`), so that a stopped process resumes it.
 *
 * `analytics_contributions.generation` names the counters a response's stored contribution is
 * counted in. Adding a column with a constant default rewrites no row on either database (SQLite
 * changes the table's definition only; PostgreSQL 11 and later keep the default in the catalog),
 * so this migration holds no large table for longer than a definition change.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const ddl = ddlOf(sql)
  yield* ddl`CREATE TABLE analytics_rebuilds (
    survey_id TEXT PRIMARY KEY,
    generation INTEGER NOT NULL,
    live_generation INTEGER NOT NULL DEFAULT 0,
    active INTEGER NOT NULL,
    signature TEXT NOT NULL,
    after_created_at TEXT,
    after_id TEXT,
    passed INTEGER NOT NULL DEFAULT 0,
    requested_at TEXT NOT NULL,
    rebuilt_at TEXT
  )`
  yield* ddl`CREATE INDEX analytics_rebuilds_active ON analytics_rebuilds (active, requested_at)`
  yield* ddl`ALTER TABLE analytics_contributions ADD COLUMN generation INTEGER NOT NULL DEFAULT 0`
})
