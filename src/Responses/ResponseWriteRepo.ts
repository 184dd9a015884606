import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { storedValue } from "../Domain/AnswerValue.js"
import type { ResponseId, SurveyId } from "../Domain/Ids.js"
import { SqlDialect } from "../Sql/Dialect.js"
import { column, rowShape } from "../Sql/Rows.js"
import type { DatabaseError } from "../Sql/Transactions.js"
import type { CheckedAnswer } from "./AnswerValidation.js"

/** A response this respondent saved before, read by a later save. */
const Saved = rowShape({ completed: column.flag("r.completed") })

/** A new response as its first save writes it, before the change clock stamps it. */
export interface StartedResponse {
  readonly id: ResponseId
  readonly surveyId: SurveyId
  readonly externalUserId: string | null
  readonly tokenHash: string
  /** Its instant until the change clock gives it the save's. */
  readonly draftedAt: string
}

/** An answer's stored columns: `value`, and the JSON text of its `values`. */
export interface StoredAnswer {
  readonly questionId: string
  readonly value: string
  readonly values: string
}

const storedAnswer = (answer: CheckedAnswer): StoredAnswer => ({
  questionId: answer.questionId,
  value: storedValue(answer.type, answer.values),
  values: JSON.stringify(answer.values)
})

/**
 * The statements of a respondent's save (src/Responses/ResponseWriter.ts), each run inside the
 * save's transaction: the respondent's token, the response and its owner, its answers and their
 * rendering.
 */
export class ResponseWriteRepo extends Effect.Service<ResponseWriteRepo>()("Responses/ResponseWriteRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const dialect = yield* SqlDialect
    // SQLite's writers take turns from BEGIN IMMEDIATE on: nothing to lock.
    const tokenLock = dialect.choose({
      sqlite: () => (_exclusive: boolean) => sql``,
      pg: () => (exclusive: boolean) => exclusive ? sql` FOR UPDATE` : sql` FOR SHARE`
    })

    /** The `VALUES` rows of answers of response `responseId`, already in their stored form. */
    const answerValues = (responseId: ResponseId, answers: ReadonlyArray<StoredAnswer>) =>
      sql.join(", ", false)(answers.map((answer) => sql`(${responseId}, ${answer.questionId}, ${answer.value}, ${answer.values})`))

    return {
      /**
       * Holds the survey's row until commit, before the save reads its questions (PostgreSQL): a
       * replacement of the questions locks the row FOR UPDATE (src/Authoring/AuthoringRepo.ts
       * `lockQuestions`), so it waits for the saves holding it and they wait for it; the questions
       * read next are then those the answers are stored under. Nothing on SQLite, whose writers
       * take turns from BEGIN IMMEDIATE on.
       */
      holdSurvey: dialect.choose({
        sqlite: () => (_surveyId: SurveyId): Effect.Effect<void, DatabaseError> => Effect.void,
        pg: () => (surveyId: SurveyId): Effect.Effect<void, DatabaseError> =>
          Effect.asVoid(sql`SELECT id FROM surveys WHERE id = ${surveyId} FOR KEY SHARE`)
      }),
      /**
       * Whether the token is still stored, holding it until commit (exclusively for a save that
       * may start the token's one response).
       */
      holdToken: (tokenHash: string, exclusive: boolean): Effect.Effect<boolean, DatabaseError> =>
        Effect.map(
          sql`SELECT token_hash FROM respondent_tokens WHERE token_hash = ${tokenHash}${tokenLock(exclusive)}`.values,
          (held) => held.length > 0
        ),
      /** Whether the token already started a response. */
      startedBy: (tokenHash: string): Effect.Effect<boolean, DatabaseError> =>
        Effect.map(
          sql`SELECT response_id FROM respondent_responses WHERE token_hash = ${tokenHash} LIMIT 1`.values,
          (started) => started.length > 0
        ),
      /**
       * Stores a new response, not completed, the token that started it, and its first answers
       * (those with values: a new response has none to remove). On PostgreSQL one statement.
       * Answers the stored columns of the answers it inserted.
       */
      start: (
        response: StartedResponse,
        answers: ReadonlyArray<CheckedAnswer>
      ): Effect.Effect<ReadonlyArray<StoredAnswer>, DatabaseError> => {
        const row = sql.insert({
          id: response.id,
          surveyId: response.surveyId,
          externalUserId: response.externalUserId,
          completed: 0,
          completedAt: null,
          createdAt: response.draftedAt,
          updatedAt: response.draftedAt
        })
        const owner = sql.insert({ responseId: response.id, tokenHash: response.tokenHash })
        const kept = answers.filter((answer) => answer.values.length > 0).map(storedAnswer)
        return dialect.choose({
          sqlite: () => {
            const first = sql`INSERT INTO answers (response_id, question_id, value, "values") VALUES ${answerValues(response.id, kept)}`
            return Effect.all([
              sql`INSERT INTO responses ${row}`,
              sql`INSERT INTO respondent_responses ${owner}`,
              ...(kept.length > 0 ? [first] : [])
            ], { discard: true })
          },
          // One round trip: the owner's and the answers' keys refer to the response inserted beside them.
          pg: () =>
            kept.length > 0
              ? sql`WITH started AS (INSERT INTO responses ${row}), owned AS (INSERT INTO respondent_responses ${owner})
                  INSERT INTO answers (response_id, question_id, value, "values") VALUES ${answerValues(response.id, kept)}`
              : sql`WITH started AS (INSERT INTO responses ${row}) INSERT INTO respondent_responses ${owner}`
        }).pipe(Effect.as(kept))
      },
      /**
       * The response `id` of this survey if this token started it, locked until commit: a
       * deletion of the response in flight commits first and the save then finds nothing, or
       * waits for the save (src/Responses/ResponseDeletion.ts).
       */
      findStarted: (
        id: ResponseId,
        surveyId: SurveyId,
        tokenHash: string
      ): Effect.Effect<Option.Option<{ readonly completed: boolean }>, DatabaseError> =>
        Effect.map(
          sql`
            SELECT ${sql.literal(Saved.columns)} FROM responses r
            JOIN respondent_responses o ON o.response_id = r.id
            WHERE r.id = ${id} AND r.survey_id = ${surveyId} AND o.token_hash = ${tokenHash}${dialect.lockRows("r")}`.values,
          (found) => Option.map(Option.fromNullable(found[0]), Saved.read)
        ),
      /**
       * Stores the answers in their stored form; an answer without values removes the question's
       * answer. At most two statements, however many answers (validation refuses a question
       * answered twice in one save, so no row is written twice by one statement).
       */
      storeAnswers: (responseId: ResponseId, answers: ReadonlyArray<CheckedAnswer>): Effect.Effect<void, DatabaseError> =>
        Effect.gen(function*() {
          const removed = answers.filter((answer) => answer.values.length === 0).map((answer) => answer.questionId)
          const kept = answers.filter((answer) => answer.values.length > 0).map(storedAnswer)
          if (removed.length > 0) {
            yield* sql`DELETE FROM answers WHERE response_id = ${responseId} AND ${sql.in("question_id", removed)}`
          }
          if (kept.length > 0) {
            yield* sql`INSERT INTO answers (response_id, question_id, value, "values") VALUES ${answerValues(responseId, kept)}
              ON CONFLICT (response_id, question_id) DO UPDATE SET value = excluded.value, "values" = excluded."values"`
          }
        })
    } as const
  })
}) {}
