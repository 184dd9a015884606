import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { ddlOf } from "../Ddl.js"

/**
 * Tenancy, keys, surveys, questions, responses and answers.
 * Timestamps are UTC ISO 8601 strings with milliseconds, so text order is time order.
 */
export default Effect.gen(function*() {
  const ddl = ddlOf(yield* SqlClient.SqlClient)
  yield* ddl`CREATE TABLE plans (
    id TEXT PRIMARY KEY,
    api_access INTEGER NOT NULL,
    burst_limit INTEGER NOT NULL,
    burst_window_minutes INTEGER NOT NULL,
    daily_limit INTEGER NOT NULL,
    monthly_limit INTEGER NOT NULL
  )`
  yield* ddl`INSERT INTO plans (id, api_access, burst_limit, burst_window_minutes, daily_limit, monthly_limit) VALUES
    ('free', 0, 0, 1, 0, 0),
    ('pro', 1, 120, 1, 10000, 250000),
    ('business', 1, 600, 1, 100000, 2500000)`
  yield* ddl`CREATE TABLE accounts (
    id TEXT PRIMARY KEY,
    plan_id TEXT NOT NULL REFERENCES plans (id)
  )`
  yield* ddl`CREATE TABLE workspaces (
    id TEXT PRIMARY KEY,
    owner_account_id TEXT NOT NULL REFERENCES accounts (id)
  )`
  yield* ddl`CREATE TABLE members (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    account_id TEXT NOT NULL REFERENCES accounts (id),
    role TEXT NOT NULL CHECK (role IN ('owner', 'editor', 'viewer')),
    PRIMARY KEY (workspace_id, account_id)
  )`
  yield* ddl`CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    created_by TEXT NOT NULL REFERENCES accounts (id),
    survey_ids TEXT,
    revoked INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
  )`
  yield* ddl`CREATE TABLE surveys (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    title TEXT NOT NULL,
    description TEXT,
    status TEXT NOT NULL CHECK (status IN ('draft', 'published', 'closed')),
    trashed INTEGER NOT NULL DEFAULT 0,
    question_count INTEGER NOT NULL DEFAULT 0,
    response_count INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  )`
  // "Newest activity first": keyset order of GET /surveys.
  yield* ddl`CREATE INDEX surveys_by_activity ON surveys (workspace_id, trashed, updated_at DESC, id DESC)`
  yield* ddl`CREATE TABLE questions (
    id TEXT PRIMARY KEY,
    survey_id TEXT NOT NULL REFERENCES surveys (id),
    type TEXT NOT NULL,
    label TEXT NOT NULL,
    required INTEGER NOT NULL DEFAULT 0,
    allow_multiple INTEGER NOT NULL DEFAULT 0,
    position INTEGER NOT NULL,
    options TEXT NOT NULL DEFAULT '[]',
    settings TEXT NOT NULL DEFAULT '{}',
    deleted INTEGER NOT NULL DEFAULT 0
  )`
  yield* ddl`CREATE INDEX questions_by_survey ON questions (survey_id, deleted, position, id)`
  yield* ddl`CREATE TABLE responses (
    id TEXT PRIMARY KEY,
    survey_id TEXT NOT NULL REFERENCES surveys (id),
    external_user_id TEXT,
    completed INTEGER NOT NULL DEFAULT 0,
    completed_at TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  )`
  // Keyset order of the responses list, unfiltered and filtered by status.
  yield* ddl`CREATE INDEX responses_by_created ON responses (survey_id, created_at, id)`
  yield* ddl`CREATE INDEX responses_by_status ON responses (survey_id, completed, created_at, id)`
  // An answer keeps its question id after the question is deleted; no foreign key on purpose.
  yield* ddl`CREATE TABLE answers (
    response_id TEXT NOT NULL REFERENCES responses (id) ON DELETE CASCADE,
    question_id TEXT NOT NULL,
    value TEXT NOT NULL,
    "values" TEXT NOT NULL,
    PRIMARY KEY (response_id, question_id)
  ) WITHOUT ROWID`
  // Every write to a response or its answers appends the response id here in the same
  // transaction; background consumers (the aggregator) follow it by sequence number.
  yield* ddl`CREATE TABLE response_changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    response_id TEXT NOT NULL,
    survey_id TEXT NOT NULL,
    changed_at TEXT NOT NULL
  )`
})
