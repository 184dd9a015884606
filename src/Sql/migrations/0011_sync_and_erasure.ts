import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { ddlOf } from "../Ddl.js"

/**
 * Sync by change, deletion and erasure, idempotent creation (v1-extensions §X2).
 */
export default Effect.gen(function*() {
  const ddl = ddlOf(yield* SqlClient.SqlClient)
  // Keyset orders of `?updatedAfter=`, unfiltered and filtered by status.
  yield* ddl`CREATE INDEX responses_by_updated ON responses (survey_id, updated_at, id)`
  yield* ddl`CREATE INDEX responses_by_status_updated ON responses (survey_id, completed, updated_at, id)`
  // The last updatedAt given out per survey: the next change gets a later one, whatever the
  // wall clock says, so updatedAt follows the order in which changes commit (even when the
  // response that held the largest one has been deleted since).
  yield* ddl`CREATE TABLE response_clock (
    survey_id TEXT PRIMARY KEY,
    last_updated_at TEXT NOT NULL
  ) WITHOUT ROWID`
  // Erasure finds a person's responses and embed sessions by their externalUserId.
  yield* ddl`CREATE INDEX responses_by_external_user ON responses (external_user_id) WHERE external_user_id IS NOT NULL`
  yield* ddl`CREATE INDEX embed_sessions_by_user ON embed_sessions (workspace_id, external_user_id)`
  yield* ddl`CREATE INDEX respondent_tokens_by_embed ON respondent_tokens (embed_session_id)
    WHERE embed_session_id IS NOT NULL`
  // The response an event carries, so that deleting it can reduce every stored payload of it.
  yield* ddl`ALTER TABLE events ADD COLUMN response_id TEXT`
  yield* ddl`CREATE INDEX events_by_response ON events (response_id) WHERE response_id IS NOT NULL`
  // The first answer to a request sent with an Idempotency-Key, per workspace or respondent
  // token, kept 24 hours. The primary key is what makes two concurrent requests create one thing.
  yield* ddl`CREATE TABLE idempotency_keys (
    scope TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    status INTEGER NOT NULL,
    body TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (scope, idempotency_key)
  ) WITHOUT ROWID`
  yield* ddl`CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at)`
})
