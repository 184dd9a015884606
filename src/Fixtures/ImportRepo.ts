import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { StoredQuestionType } from "../Domain/Question.js"
import { refreshAnswerDocuments } from "../Responses/AnswerDocumentRepo.js"
import { column, rowShape } from "../Sql/Rows.js"
import type { Fixture } from "./Fixture.js"

type Row<K extends keyof Fixture> = Fixture[K][number]

const bool = (b: boolean) => (b ? 1 : 0)

const QuestionTypes = rowShape({
  id: column.text("id"),
  surveyId: column.text("survey_id"),
  type: column.oneOf("type", StoredQuestionType.literals)
})
const Ids = rowShape({ id: column.text("id") })
const ResponseSurveys = rowShape({ id: column.text("id"), surveyId: column.text("survey_id") })

/** A stored answer as the import writes it: the value in its column form and the values as JSON. */
export type ImportedAnswer = {
  readonly responseId: string
  readonly questionId: string
  readonly value: string
  readonly values: string
}

/**
 * The statements of a fixture import, each an insert or a replacement by id. Run inside the
 * import's transactions; a failure is the caller's to report.
 */
export class ImportRepo extends Effect.Service<ImportRepo>()("Fixtures/ImportRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const plan = (p: Row<"plans">) =>
      sql`INSERT INTO plans ${sql.insert(p)}
        ON CONFLICT (id) DO UPDATE SET api_access = excluded.api_access, burst_limit = excluded.burst_limit,
          burst_window_minutes = excluded.burst_window_minutes, daily_limit = excluded.daily_limit,
          monthly_limit = excluded.monthly_limit`

    const account = (a: Row<"accounts">) =>
      sql`INSERT INTO accounts ${sql.insert(a)} ON CONFLICT (id) DO UPDATE SET plan_id = excluded.plan_id`

    const workspace = (w: Row<"workspaces">) =>
      sql`INSERT INTO workspaces ${sql.insert(w)}
        ON CONFLICT (id) DO UPDATE SET owner_account_id = excluded.owner_account_id`

    const member = (m: Row<"members">) =>
      sql`INSERT INTO members ${sql.insert(m)}
        ON CONFLICT (workspace_id, account_id) DO UPDATE SET role = excluded.role`

    const apiKey = (k: Row<"apiKeys">, tokenHash: string, now: string) =>
      sql`INSERT INTO api_keys ${
        sql.insert({
          id: `key_${tokenHash.slice(0, 20)}`,
          tokenHash,
          workspaceId: k.workspaceId,
          createdBy: k.createdBy,
          surveyIds: k.surveyIds === null ? null : JSON.stringify(k.surveyIds),
          revoked: bool(k.revoked),
          createdAt: now
        })
      } ON CONFLICT (token_hash) DO UPDATE SET workspace_id = excluded.workspace_id,
          created_by = excluded.created_by, survey_ids = excluded.survey_ids, revoked = excluded.revoked`

    const survey = (s: Row<"surveys">) =>
      sql`INSERT INTO surveys ${
        sql.insert({
          id: s.id,
          workspaceId: s.workspaceId,
          title: s.title,
          description: s.description,
          status: s.status,
          trashed: bool(s.trashed),
          createdAt: s.createdAt,
          updatedAt: s.updatedAt
        })
      } ON CONFLICT (id) DO UPDATE SET workspace_id = excluded.workspace_id, title = excluded.title,
          description = excluded.description, status = excluded.status, trashed = excluded.trashed,
          created_at = excluded.created_at, updated_at = excluded.updated_at`

    const question = (surveyId: string, q: Row<"surveys">["questions"][number]) =>
      sql`INSERT INTO questions ${
        sql.insert({
          id: q.id,
          surveyId,
          type: q.type,
          label: q.label,
          required: bool(q.required),
          allowMultiple: bool(q.allowMultiple),
          position: q.order,
          options: JSON.stringify(q.options),
          settings: JSON.stringify(q.settings),
          deleted: bool(q.deleted)
        })
      } ON CONFLICT (survey_id, id) DO UPDATE SET type = excluded.type,
          label = excluded.label, required = excluded.required, allow_multiple = excluded.allow_multiple,
          position = excluded.position, options = excluded.options, settings = excluded.settings,
          deleted = excluded.deleted`

    /** The stored questions' types of these surveys. */
    const questionTypes = (surveyIds: ReadonlyArray<string>) =>
      Effect.map(
        sql`SELECT ${sql.literal(QuestionTypes.columns)} FROM questions WHERE survey_id IN ${sql.in(surveyIds)}`.values,
        (rows) => rows.map(QuestionTypes.read)
      )

    /** Stores responses with none of their answers, each with a change at `now`. */
    const responses = (chunk: ReadonlyArray<Row<"responses">>, now: string) =>
      Effect.all([
        sql`INSERT INTO responses ${
          sql.insert(chunk.map((r) => ({
            id: r.id,
            surveyId: r.surveyId,
            externalUserId: r.externalUserId,
            completed: bool(r.completedAt !== null),
            completedAt: r.completedAt,
            createdAt: r.createdAt,
            updatedAt: r.completedAt ?? r.createdAt
          })))
        } ON CONFLICT (id) DO UPDATE SET survey_id = excluded.survey_id, external_user_id = excluded.external_user_id,
          completed = excluded.completed, completed_at = excluded.completed_at, created_at = excluded.created_at,
          updated_at = excluded.updated_at`,
        sql`DELETE FROM answers WHERE response_id IN ${sql.in(chunk.map((r) => r.id))}`,
        sql`INSERT INTO response_changes ${
          sql.insert(chunk.map((r) => ({ responseId: r.id, surveyId: r.surveyId, changedAt: now })))
        }`
      ], { discard: true })

    const answers = (rows: ReadonlyArray<ImportedAnswer>) =>
      sql`INSERT INTO answers ${sql.insert(rows)}
        ON CONFLICT (response_id, question_id) DO UPDATE SET value = excluded.value, "values" = excluded."values"`

    /** The surveys' question counts, counted again. */
    const recountQuestions = (surveyIds: ReadonlyArray<string>) =>
      sql`UPDATE surveys SET
          question_count = (SELECT COUNT(*) FROM questions q
                            WHERE q.survey_id = surveys.id AND q.deleted = 0 AND q.type <> 'section')
        WHERE id IN ${sql.in(surveyIds)}`

    /** Those of the surveys that are stored. */
    const storedSurveys = (surveyIds: ReadonlyArray<string>) =>
      Effect.map(
        sql`SELECT ${sql.literal(Ids.columns)} FROM surveys WHERE id IN ${sql.in(surveyIds)}`.values,
        (rows) => rows.map(Ids.at.id)
      )

    /** The surveys of those of the responses that are stored. */
    const storedResponses = (responseIds: ReadonlyArray<string>) =>
      Effect.map(
        sql`SELECT ${sql.literal(ResponseSurveys.columns)} FROM responses WHERE id IN ${sql.in(responseIds)}`.values,
        (rows) => rows.map(ResponseSurveys.read)
      )

    /** Adds `delta` to the survey's response count. */
    const addResponseCount = (surveyId: string, delta: number) =>
      sql`UPDATE surveys SET response_count = response_count + ${delta} WHERE id = ${surveyId}`

    /** Whether a workspace with this id is stored. */
    const workspaceExists = (id: string) =>
      sql`SELECT id FROM workspaces WHERE id = ${id}`.pipe(Effect.map((rows) => rows.length > 0))

    return {
      plan,
      account,
      workspace,
      member,
      apiKey,
      survey,
      question,
      questionTypes,
      responses,
      answers,
      refreshDocuments: (responseIds: ReadonlyArray<string>) => refreshAnswerDocuments(sql, responseIds),
      recountQuestions,
      storedSurveys,
      storedResponses,
      addResponseCount,
      workspaceExists
    } as const
  })
}) {}
