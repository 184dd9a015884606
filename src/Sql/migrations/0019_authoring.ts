import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { dialectOf } from "../Dialect.js"

/**
 * A question id is unique within its survey, no longer across all surveys: surveys authored over
 * the API name their questions themselves, and two surveys (of one workspace or two) may both
 * have a `q_email`. The primary key of `questions` becomes `(survey_id, id)`; every statement
 * that joins a question already names its survey.
 *
 * SQLite cannot change a table's primary key in place: the table is rebuilt. Nothing references
 * it (answers keep a question id without a foreign key, so that they outlive the question). Its
 * index and the triggers of 0009 go with the old table and are created again as 0009 wrote them.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  if (dialectOf(sql) === "pg") {
    yield* sql`ALTER TABLE questions DROP CONSTRAINT questions_pkey`
    yield* sql`ALTER TABLE questions ADD PRIMARY KEY (survey_id, id)`
    return
  }

  yield* sql`CREATE TABLE questions_next (
    id TEXT NOT NULL,
    survey_id TEXT NOT NULL REFERENCES surveys (id),
    type TEXT NOT NULL,
    label TEXT NOT NULL,
    required INTEGER NOT NULL DEFAULT 0,
    allow_multiple INTEGER NOT NULL DEFAULT 0,
    position INTEGER NOT NULL,
    options TEXT NOT NULL DEFAULT '[]',
    settings TEXT NOT NULL DEFAULT '{}',
    deleted INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (survey_id, id)
  )`
  yield* sql`INSERT INTO questions_next (id, survey_id, type, label, required, allow_multiple, position, options, settings, deleted)
    SELECT id, survey_id, type, label, required, allow_multiple, position, options, settings, deleted FROM questions`
  yield* sql`DROP TABLE questions`
  yield* sql`ALTER TABLE questions_next RENAME TO questions`
  yield* sql`CREATE INDEX questions_by_survey ON questions (survey_id, deleted, position, id)`

  yield* sql`CREATE TRIGGER questions_layout_insert AFTER INSERT ON questions BEGIN
    UPDATE surveys SET answer_layout = answer_layout + 1 WHERE id = NEW.survey_id; END`
  yield* sql`CREATE TRIGGER questions_layout_delete AFTER DELETE ON questions BEGIN
    UPDATE surveys SET answer_layout = answer_layout + 1 WHERE id = OLD.survey_id; END`
  yield* sql`CREATE TRIGGER questions_layout_update AFTER UPDATE OF survey_id, type, position, deleted ON questions
    WHEN OLD.survey_id IS NOT NEW.survey_id OR OLD.type IS NOT NEW.type
      OR OLD.position IS NOT NEW.position OR OLD.deleted IS NOT NEW.deleted
    BEGIN
      UPDATE surveys SET answer_layout = answer_layout + 1 WHERE id IN (OLD.survey_id, NEW.survey_id);
    END`
})
