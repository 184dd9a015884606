import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { ddlOf } from "../Ddl.js"

/**
 * Embed sessions (one-time URLs for a known user) and respondent tokens (what a survey page
 * hands to its script to save answers). Only SHA-256 hashes of the tokens are stored.
 */
export default Effect.gen(function*() {
  const ddl = ddlOf(yield* SqlClient.SqlClient)
  yield* ddl`CREATE TABLE embed_sessions (
    id TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    survey_id TEXT NOT NULL REFERENCES surveys (id),
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    external_user_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    consumed_at TEXT
  )`
  // A token from an embed session starts exactly one response; one from /s/{id}, any number.
  yield* ddl`CREATE TABLE respondent_tokens (
    token_hash TEXT PRIMARY KEY,
    survey_id TEXT NOT NULL REFERENCES surveys (id),
    embed_session_id TEXT REFERENCES embed_sessions (id),
    external_user_id TEXT,
    single_response INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
  ) WITHOUT ROWID`
  yield* ddl`CREATE INDEX respondent_tokens_by_expiry ON respondent_tokens (expires_at)`
  yield* ddl`CREATE INDEX embed_sessions_by_expiry ON embed_sessions (expires_at)`
  // Which token started a response: only that token may change it.
  yield* ddl`CREATE TABLE respondent_responses (
    response_id TEXT PRIMARY KEY REFERENCES responses (id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL
  ) WITHOUT ROWID`
  yield* ddl`CREATE INDEX respondent_responses_by_token ON respondent_responses (token_hash)`
})
