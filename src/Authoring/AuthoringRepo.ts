import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { StoredQuestionType } from "../Domain/Question.js"
import type { SurveyId, WorkspaceId } from "../Domain/Ids.js"
import { QuestionColumns } from "../Questions/QuestionRepo.js"
import { column, rowShape, type RowOf } from "../Sql/Rows.js"

export interface NewSurvey {
  readonly id: SurveyId
  readonly workspaceId: WorkspaceId
  readonly title: string
  readonly description: string | null
  readonly createdAt: string
}

/** A question as authoring stores it: a question row but for its survey and deletion; `position` is 1-based. */
export type QuestionWrite = Omit<RowOf<typeof QuestionColumns.fields>, "surveyId" | "deleted">

const StoredQuestionColumns = rowShape({
  id: column.text("id"),
  type: column.oneOf("type", StoredQuestionType.literals),
  deleted: column.flag("deleted")
})
export type StoredQuestion = RowOf<typeof StoredQuestionColumns.fields>

const AnsweredColumns = rowShape({ questionId: column.text("a.question_id") })

const bool = (b: boolean) => (b ? 1 : 0)

/**
 * The statements of authoring: a new survey, a survey's fields and version, and the replacement
 * of its questions. Run inside the authoring service's transactions; a failure of the database
 * is the caller's.
 */
export class AuthoringRepo extends Effect.Service<AuthoringRepo>()("Authoring/AuthoringRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const insertSurvey = (s: NewSurvey) =>
      sql`INSERT INTO surveys ${sql.insert({ ...s, status: "draft", updatedAt: s.createdAt })}`.pipe(Effect.asVoid)

    /**
     * Moves the survey's version from `from` to `to`: false when it is no longer at `from` (another
     * change came first) or is in the trash. On PostgreSQL the row stays locked until commit, so
     * changes to one survey take turns.
     */
    const claim = (id: SurveyId, from: string, to: string) =>
      sql`UPDATE surveys SET updated_at = ${to}
        WHERE id = ${id} AND updated_at = ${from} AND trashed = 0 RETURNING id`.pipe(
        Effect.map((rows) => rows.length > 0)
      )

    /**
     * Locks the survey's row for a replacement of its questions (PostgreSQL): a save holds the row
     * FOR KEY SHARE from before it reads the questions to its commit
     * (src/Responses/ResponseWriteRepo.ts `holdSurvey`), so the two take turns. SQLite's writers
     * take turns anyway.
     */
    const lockQuestions = (id: SurveyId) =>
      sql.onDialectOrElse({
        pg: () => sql`SELECT id FROM surveys WHERE id = ${id} FOR UPDATE`.pipe(Effect.asVoid),
        orElse: () => Effect.void
      })

    const setDetails = (id: SurveyId, title: string, description: string | null) =>
      sql`UPDATE surveys SET title = ${title}, description = ${description} WHERE id = ${id}`.pipe(Effect.asVoid)

    /** Every question row of the survey, deleted ones included (their ids still name answers). */
    const questionsOf = (surveyId: SurveyId) =>
      sql`SELECT ${sql.literal(StoredQuestionColumns.columns)} FROM questions WHERE survey_id = ${surveyId}`.values.pipe(
        Effect.map((rows) => rows.map(StoredQuestionColumns.read)),
        Effect.orDie
      )

    /** Which of these questions of the survey have at least one stored answer. */
    const answered = (surveyId: SurveyId, questionIds: ReadonlyArray<string>) =>
      questionIds.length === 0
        ? Effect.succeed(new Set<string>())
        : sql`SELECT DISTINCT ${sql.literal(AnsweredColumns.columns)} FROM answers a JOIN responses r ON r.id = a.response_id
            WHERE r.survey_id = ${surveyId} AND a.question_id IN ${sql.in(questionIds)}`.values.pipe(
          Effect.map((rows) => new Set(rows.map(AnsweredColumns.at.questionId))),
          Effect.orDie
        )

    /** Writes the questions, each new or replacing the row of its id (a deleted one comes back). */
    const upsertQuestions = (surveyId: SurveyId, questions: ReadonlyArray<QuestionWrite>) =>
      questions.length === 0 ? Effect.void : sql`INSERT INTO questions ${
        sql.insert(questions.map((q) => ({
          ...q,
          surveyId,
          required: bool(q.required),
          allowMultiple: bool(q.allowMultiple),
          options: JSON.stringify(q.options),
          settings: JSON.stringify(q.settings),
          deleted: 0
        })))
      } ON CONFLICT (survey_id, id) DO UPDATE SET type = excluded.type, label = excluded.label,
          required = excluded.required, allow_multiple = excluded.allow_multiple, position = excluded.position,
          options = excluded.options, settings = excluded.settings, deleted = 0`.pipe(Effect.asVoid)

    /** Marks questions deleted: kept for their answers, which then read with null fieldId and type. */
    const deleteQuestions = (surveyId: SurveyId, questionIds: ReadonlyArray<string>) =>
      questionIds.length === 0 ? Effect.void : sql`UPDATE questions SET deleted = 1
        WHERE survey_id = ${surveyId} AND id IN ${sql.in(questionIds)} AND deleted = 0`.pipe(Effect.asVoid)

    /** The survey's question count (sections and deleted questions left out), counted again. */
    const recountQuestions = (surveyId: SurveyId) =>
      sql`UPDATE surveys SET question_count = (SELECT COUNT(*) FROM questions q
          WHERE q.survey_id = surveys.id AND q.deleted = 0 AND q.type <> 'section')
        WHERE id = ${surveyId}`.pipe(Effect.asVoid)

    return {
      insertSurvey,
      claim,
      lockQuestions,
      setDetails,
      questionsOf,
      answered,
      upsertQuestions,
      deleteQuestions,
      recountQuestions
    } as const
  })
}) {}
