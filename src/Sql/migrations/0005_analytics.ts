import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { ddlOf } from "../Ddl.js"

/**
 * Stored aggregates behind GET /surveys/{id}/analytics, kept current by the aggregator.
 * Every counter is additive so that a changed response is applied as "minus what it
 * contributed before, plus what it contributes now"; `analytics_contributions` remembers
 * the former per response.
 */
export default Effect.gen(function*() {
  const ddl = ddlOf(yield* SqlClient.SqlClient)
  // How far the aggregator has followed response_changes (one row).
  yield* ddl`CREATE TABLE analytics_position (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    seq INTEGER NOT NULL
  )`
  yield* ddl`INSERT INTO analytics_position (id, seq) VALUES (1, 0)`
  // Per survey; `signature` names the question layout the counters were built against,
  // so a change of positions, types or deletions triggers a rebuild of that survey.
  yield* ddl`CREATE TABLE analytics_surveys (
    survey_id TEXT PRIMARY KEY,
    response_count INTEGER NOT NULL DEFAULT 0,
    completed_count INTEGER NOT NULL DEFAULT 0,
    signature TEXT NOT NULL DEFAULT ''
  )`
  // Incomplete responses by the furthest position they answered: "reached" counts.
  yield* ddl`CREATE TABLE analytics_reach (
    survey_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (survey_id, position)
  ) WITHOUT ROWID`
  yield* ddl`CREATE TABLE analytics_questions (
    survey_id TEXT NOT NULL,
    question_id TEXT NOT NULL,
    answered INTEGER NOT NULL,
    text_count INTEGER NOT NULL,
    numeric_count INTEGER NOT NULL,
    numeric_sum REAL NOT NULL,
    numeric_sum_squares REAL NOT NULL,
    PRIMARY KEY (survey_id, question_id)
  ) WITHOUT ROWID`
  // Respondents per option value (checkbox, scale, sort) and the sum of 1-based ranks (sort).
  yield* ddl`CREATE TABLE analytics_options (
    survey_id TEXT NOT NULL,
    question_id TEXT NOT NULL,
    value TEXT NOT NULL,
    count INTEGER NOT NULL,
    rank_sum INTEGER NOT NULL,
    PRIMARY KEY (survey_id, question_id, value)
  ) WITHOUT ROWID`
  // Exact per-value counts of numeric answers (number, scale): min, max and median.
  yield* ddl`CREATE TABLE analytics_numbers (
    survey_id TEXT NOT NULL,
    question_id TEXT NOT NULL,
    num REAL NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (survey_id, question_id, num)
  ) WITHOUT ROWID`
  // What each response currently contributes (JSON), so that a later change subtracts it exactly.
  yield* ddl`CREATE TABLE analytics_contributions (
    response_id TEXT PRIMARY KEY,
    survey_id TEXT NOT NULL,
    contribution TEXT NOT NULL
  ) WITHOUT ROWID`
  yield* ddl`CREATE INDEX analytics_contributions_by_survey ON analytics_contributions (survey_id)`
})
