import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { dialectOf } from "../Dialect.js"

/**
 * The read path's layout (docs/performance.md): responses clustered by
 * `(survey_id, created_at, id)` (`WITHOUT ROWID`), the keyset order of the responses list, and each
 * response row carrying its answers rendered in wire form (`answers_json`, tagged with the
 * survey's `answer_layout`). A page of responses is then one
 * range read of one table.
 *
 * `responses` is rebuilt: SQLite cannot change a table's primary key in place. Its children
 * (`answers`, `respondent_responses`) are rebuilt with it, because dropping a parent table
 * deletes its children's rows through `ON DELETE CASCADE` when foreign keys are on, and that
 * pragma cannot be changed inside the migration's transaction. The new tables reference the new
 * parent, and renaming the parent renames those references.
 *
 * PostgreSQL has no clustered tables: there `responses` keeps its primary key on `id`, the
 * keyset order is the index `responses_by_created` of 0001, and only the columns and the
 * triggers are added (trigger functions: PostgreSQL's triggers call a function).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  if (dialectOf(sql) === "pg") return yield* onPostgres

  // Any other table referencing responses would lose its rows with the old table: refuse.
  const children = yield* sql`
    SELECT DISTINCT m.name FROM sqlite_schema m, pragma_foreign_key_list(m.name) f
    WHERE m.type = 'table' AND f."table" = 'responses'`.pipe(
    Effect.flatMap(Schema.decodeUnknown(Schema.Array(Schema.Struct({ name: Schema.String }))))
  )
  const unexpected = children.map((c) => c.name).filter((n) => n !== "answers" && n !== "respondent_responses")
  if (unexpected.length > 0) {
    return yield* Effect.die(new Error(`0009: tables ${unexpected.join(", ")} reference responses; extend this migration`))
  }

  yield* sql`ALTER TABLE surveys ADD COLUMN answer_layout INTEGER NOT NULL DEFAULT 0`

  yield* sql`CREATE TABLE responses_next (
    survey_id TEXT NOT NULL REFERENCES surveys (id),
    created_at TEXT NOT NULL,
    id TEXT NOT NULL,
    external_user_id TEXT,
    completed INTEGER NOT NULL DEFAULT 0,
    completed_at TEXT,
    updated_at TEXT NOT NULL,
    answers_json TEXT,
    answers_layout INTEGER,
    PRIMARY KEY (survey_id, created_at, id)
  ) WITHOUT ROWID`
  yield* sql`INSERT INTO responses_next (survey_id, created_at, id, external_user_id, completed, completed_at, updated_at)
    SELECT survey_id, created_at, id, external_user_id, completed, completed_at, updated_at FROM responses`
  // The parent key of answers and respondent_responses, and GET /responses/{id}.
  yield* sql`CREATE UNIQUE INDEX responses_by_id ON responses_next (id)`

  yield* sql`CREATE TABLE answers_next (
    response_id TEXT NOT NULL REFERENCES responses_next (id) ON DELETE CASCADE,
    question_id TEXT NOT NULL,
    value TEXT NOT NULL,
    "values" TEXT NOT NULL,
    PRIMARY KEY (response_id, question_id)
  ) WITHOUT ROWID`
  yield* sql`INSERT INTO answers_next (response_id, question_id, value, "values")
    SELECT response_id, question_id, value, "values" FROM answers`
  yield* sql`CREATE TABLE respondent_responses_next (
    response_id TEXT PRIMARY KEY REFERENCES responses_next (id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL
  ) WITHOUT ROWID`
  yield* sql`INSERT INTO respondent_responses_next (response_id, token_hash)
    SELECT response_id, token_hash FROM respondent_responses`

  yield* sql`DROP TABLE answers`
  yield* sql`DROP TABLE respondent_responses`
  yield* sql`DROP TABLE responses`
  yield* sql`ALTER TABLE responses_next RENAME TO responses`
  yield* sql`ALTER TABLE answers_next RENAME TO answers`
  yield* sql`ALTER TABLE respondent_responses_next RENAME TO respondent_responses`
  // The status filter's keyset order (the primary key's columns follow in every index entry).
  yield* sql`CREATE INDEX responses_by_status ON responses (survey_id, completed, created_at, id)`
  yield* sql`CREATE INDEX respondent_responses_by_token ON respondent_responses (token_hash)`

  // A rendering is cleared whenever any answer of its response changes.
  yield* sql`CREATE TRIGGER answers_changed_insert AFTER INSERT ON answers BEGIN
    UPDATE responses SET answers_json = NULL, answers_layout = NULL
    WHERE id = NEW.response_id AND answers_layout IS NOT NULL; END`
  yield* sql`CREATE TRIGGER answers_changed_update AFTER UPDATE ON answers BEGIN
    UPDATE responses SET answers_json = NULL, answers_layout = NULL
    WHERE id IN (OLD.response_id, NEW.response_id) AND answers_layout IS NOT NULL; END`
  yield* sql`CREATE TRIGGER answers_changed_delete AFTER DELETE ON answers BEGIN
    UPDATE responses SET answers_json = NULL, answers_layout = NULL
    WHERE id = OLD.response_id AND answers_layout IS NOT NULL; END`

  // Every question change that can change a rendering moves the survey's answer_layout: a new
  // question (an answer to its id becomes live), a removed one, or a change of survey, type,
  // position or deletion. Label, options and settings do not show in answers.
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

  const failures = yield* sql`PRAGMA foreign_key_check`
  if (failures.length > 0) return yield* Effect.die(new Error("0009: foreign keys broken by the rebuild"))

  yield* renderStored
})

/** Renders the stored responses, in batches by id. */
const renderStored = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  let after = ""
  while (true) {
    const ids = yield* sql`SELECT id FROM responses WHERE id > ${after} ORDER BY id LIMIT 400`.pipe(
      Effect.flatMap(Schema.decodeUnknown(Schema.Array(Schema.Struct({ id: Schema.String }))))
    )
    const last = ids[ids.length - 1]
    if (last === undefined) break
    yield* renderBatch(ids.map((r) => r.id))
    after = last.id
  }
})

/*
 * The wire form of a response's `answers` as it was when this migration was written (api-v1
 * `Answer`): answers in question order, answers to deleted questions and sections last by question
 * id, with null `fieldId`/`type`. Kept here, not imported, so that this migration writes what it
 * always wrote; a later change of the wire form moves `answer_layout`, and the renderings of this
 * migration are then no longer used.
 */
const StoredAnswer = Schema.Struct({
  response: Schema.String,
  question: Schema.String,
  value: Schema.String,
  values: Schema.parseJson(Schema.Array(Schema.String)),
  type: Schema.NullOr(Schema.String),
  position: Schema.NullOr(Schema.Number)
})
type StoredAnswer = typeof StoredAnswer.Type

const rank = (a: StoredAnswer) =>
  a.type === null || a.type === "section" ? Number.POSITIVE_INFINITY : a.position ?? 0

const inQuestionOrder = (a: StoredAnswer, b: StoredAnswer): number => {
  const pa = rank(a)
  const pb = rank(b)
  return pa === pb ? (a.question < b.question ? -1 : a.question > b.question ? 1 : 0) : pa - pb
}

const answersJson = (answers: ReadonlyArray<StoredAnswer>): string =>
  JSON.stringify(answers.map((a) => {
    const live = a.type !== null && a.type !== "section"
    return { fieldId: live ? a.question : null, type: live ? a.type : null, value: a.value, values: a.values }
  }))

const renderBatch = (ids: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const answers = yield* sql`
      SELECT a.response_id AS response, a.question_id AS question, a.value AS value, a."values" AS "values",
             CASE WHEN q.deleted = 0 THEN q.type END AS type, q.position AS position
      FROM answers a
      JOIN responses r ON r.id = a.response_id
      LEFT JOIN questions q ON q.id = a.question_id AND q.survey_id = r.survey_id
      WHERE a.response_id IN ${sql.in(ids)}`.pipe(Effect.flatMap(Schema.decodeUnknown(Schema.Array(StoredAnswer))))
    const byResponse = new Map<string, Array<StoredAnswer>>()
    for (const answer of answers) {
      const list = byResponse.get(answer.response)
      if (list === undefined) byResponse.set(answer.response, [answer])
      else list.push(answer)
    }
    for (const id of ids) {
      const rendered = answersJson((byResponse.get(id) ?? []).sort(inQuestionOrder))
      yield* sql`UPDATE responses SET answers_json = ${rendered},
          answers_layout = (SELECT s.answer_layout FROM surveys s WHERE s.id = responses.survey_id)
        WHERE id = ${id}`
    }
  })

const onPostgres = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE surveys ADD COLUMN answer_layout BIGINT NOT NULL DEFAULT 0`
  yield* sql`ALTER TABLE responses ADD COLUMN answers_json TEXT, ADD COLUMN answers_layout BIGINT`

  // A rendering is cleared whenever any answer of its response changes.
  yield* sql.unsafe(`CREATE FUNCTION answers_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP <> 'INSERT' THEN
        UPDATE responses SET answers_json = NULL, answers_layout = NULL
        WHERE id = OLD.response_id AND answers_layout IS NOT NULL;
      END IF;
      IF TG_OP <> 'DELETE' THEN
        UPDATE responses SET answers_json = NULL, answers_layout = NULL
        WHERE id = NEW.response_id AND answers_layout IS NOT NULL;
      END IF;
      RETURN NULL;
    END $$`)
  yield* sql`CREATE TRIGGER answers_changed AFTER INSERT OR UPDATE OR DELETE ON answers
    FOR EACH ROW EXECUTE FUNCTION answers_changed()`

  // The question changes that move the survey's answer_layout, as on SQLite above.
  yield* sql.unsafe(`CREATE FUNCTION questions_layout() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN
        UPDATE surveys SET answer_layout = answer_layout + 1 WHERE id = NEW.survey_id;
      ELSIF TG_OP = 'DELETE' THEN
        UPDATE surveys SET answer_layout = answer_layout + 1 WHERE id = OLD.survey_id;
      ELSIF OLD.survey_id IS DISTINCT FROM NEW.survey_id OR OLD.type IS DISTINCT FROM NEW.type
        OR OLD.position IS DISTINCT FROM NEW.position OR OLD.deleted IS DISTINCT FROM NEW.deleted THEN
        UPDATE surveys SET answer_layout = answer_layout + 1 WHERE id IN (OLD.survey_id, NEW.survey_id);
      END IF;
      RETURN NULL;
    END $$`)
  yield* sql`CREATE TRIGGER questions_layout AFTER INSERT OR UPDATE OR DELETE ON questions
    FOR EACH ROW EXECUTE FUNCTION questions_layout()`

  yield* renderStored
})
