import { SqlClient } from "@effect/sql"
import { Clock, Effect, Option } from "effect"
import { storedValue } from "../Domain/AnswerValue.js"
import { InvalidRequest, NotFound } from "../Domain/Errors.js"
import { makeId, ResponseId } from "../Domain/Ids.js"
import { SurveyResponse } from "../Domain/Response.js"
import { toIso } from "../Domain/Time.js"
import { Outbox } from "../Events/Outbox.js"
import { QuestionRepo } from "../Questions/QuestionRepo.js"
import { refreshAnswerDocuments } from "../Responses/AnswerDocuments.js"
import { stampChange } from "../Responses/ChangeClock.js"
import { ResponseRepo } from "../Responses/ResponseRepo.js"
import { dialectOf } from "../Sql/Dialect.js"
import { column, rowShape } from "../Sql/Rows.js"
import { SurveyRepo } from "../Surveys/SurveyRepo.js"
import { missingRequired, type SubmittedAnswer, validateAnswers, type ValidationQuestion } from "./AnswerValidation.js"
import { type RespondentContext, tokenRefused } from "../Domain/Respondent.js"

export interface Submission {
  readonly answers: ReadonlyArray<SubmittedAnswer>
  readonly finished: boolean
}

const invalid = (message: string, issues: ReadonlyArray<{ readonly path: string; readonly message: string }>) =>
  new InvalidRequest({ message, issues })

/** A response this respondent saved before, read by a later save. */
const Saved = rowShape({ completed: column.num("r.completed") })
const Answered = rowShape({ questionId: column.text("question_id") })

type ResponseEventType = "response.created" | "response.updated" | "response.completed"

/**
 * Writes respondents' answers. One transaction per call: the response and its answers, the
 * survey's response count, a `response_changes` row, and the save's events (`response.created`
 * for the first save, `response.updated` for a later one that does not complete it,
 * `response.completed` for the completing one), so that either all of it is stored or none of it.
 */
export class ResponseWriter extends Effect.Service<ResponseWriter>()("Respondents/ResponseWriter", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const surveys = yield* SurveyRepo
    const questions = yield* QuestionRepo
    const responses = yield* ResponseRepo
    const outbox = yield* Outbox

    const write = (respondent: RespondentContext, target: Option.Option<string>, submission: Submission) =>
      Effect.gen(function*() {
        // The token was checked before this transaction began: read again inside it, so that an
        // erasure of the person (which deletes the token first, src/Responses/ResponseDeletion.ts)
        // either waits for this save and erases what it stored, or came first and this save is
        // refused like any unknown token. SQLite's writers take turns from BEGIN IMMEDIATE on; on
        // PostgreSQL the row is locked until commit. A token good for one response is held
        // exclusively by a save that may start one, so that of two such saves at once the second
        // finds the first's response. A survey page's token (no person, any number of responses)
        // is signed, not stored: nothing to hold.
        if (respondent.externalUserId !== null || respondent.singleResponse) {
          const mode = dialectOf(sql) !== "pg"
            ? sql``
            : Option.isNone(target) && respondent.singleResponse
            ? sql` FOR UPDATE`
            : sql` FOR SHARE`
          const held = yield* sql`SELECT token_hash FROM respondent_tokens WHERE token_hash = ${respondent.tokenHash}${mode}`.values
          if (held.length === 0) return yield* tokenRefused()
        }
        const survey = yield* surveys.findById(respondent.surveyId)
        if (Option.isNone(survey) || survey.value.trashed !== 0 || survey.value.status !== "published") {
          const status = Option.match(survey, {
            onNone: () => "gone",
            onSome: (s) => s.trashed !== 0 ? "gone" : s.status
          })
          return yield* invalid("The survey is no longer accepting responses.", [
            { path: "surveyId", message: `survey is ${status}, not published` }
          ])
        }
        const { workspaceId } = survey.value
        const rows = yield* questions.listForSurvey(respondent.surveyId)
        const checkable: ReadonlyArray<ValidationQuestion> = rows.map((row) => ({
          id: row.id,
          type: row.type,
          required: row.required !== 0,
          allowMultiple: row.allowMultiple !== 0,
          options: row.options
        }))
        const { accepted, issues } = validateAnswers(checkable, submission.answers)
        if (issues.length > 0) return yield* invalid("Some answers are not valid; nothing was saved.", issues)

        // Written first with the current time; the change's instant replaces it at the end (stampChange).
        const draft = toIso(yield* Clock.currentTimeMillis)
        const responseId = yield* Option.match(target, {
          onNone: () =>
            Effect.gen(function*() {
              if (respondent.singleResponse) {
                const started = yield* sql`
                  SELECT response_id FROM respondent_responses WHERE token_hash = ${respondent.tokenHash} LIMIT 1`.values
                if (started.length > 0) {
                  return yield* invalid("This embed link already started a response; continue it with PATCH.", [
                    { path: "", message: "one response per embed session" }
                  ])
                }
              }
              const id = makeId("rsp")
              yield* sql`INSERT INTO responses ${
                sql.insert({
                  id,
                  surveyId: respondent.surveyId,
                  externalUserId: respondent.externalUserId,
                  completed: 0,
                  completedAt: null,
                  createdAt: draft,
                  updatedAt: draft
                })
              }`
              yield* sql`INSERT INTO respondent_responses ${sql.insert({ responseId: id, tokenHash: respondent.tokenHash })}`
              return id
            }),
          onSome: (id) =>
            Effect.gen(function*() {
              const found = yield* sql`
                SELECT ${sql.literal(Saved.columns)} FROM responses r
                JOIN respondent_responses o ON o.response_id = r.id
                WHERE r.id = ${id} AND r.survey_id = ${respondent.surveyId} AND o.token_hash = ${respondent.tokenHash}${
                // Locked on PostgreSQL: a deletion of the response in flight commits first and this save
                // then finds nothing (404), or waits for this save (src/Responses/ResponseDeletion.ts).
                sql.onDialectOrElse({ pg: () => sql` FOR UPDATE OF r`, orElse: () => sql`` })}`.values
              const row = found[0] === undefined ? undefined : Saved.read(found[0])
              if (row === undefined) {
                return yield* new NotFound({ message: `No response ${JSON.stringify(id.slice(0, 64))} for this respondent.` })
              }
              if (row.completed !== 0) {
                return yield* invalid("This response is already completed and cannot change.", [
                  { path: "responseId", message: "response is completed" }
                ])
              }
              return id
            })
        })

        for (const answer of accepted) {
          if (answer.values.length === 0) {
            yield* sql`DELETE FROM answers WHERE response_id = ${responseId} AND question_id = ${answer.questionId}`
          } else {
            const value = storedValue(answer.type, answer.values)
            const values = JSON.stringify(answer.values)
            yield* sql`INSERT INTO answers (response_id, question_id, value, "values")
              VALUES (${responseId}, ${answer.questionId}, ${value}, ${values})
              ON CONFLICT (response_id, question_id) DO UPDATE SET value = excluded.value, "values" = excluded."values"`
          }
        }

        if (submission.finished) {
          const answered = yield* sql`
            SELECT ${sql.literal(Answered.columns)} FROM answers WHERE response_id = ${responseId}`.values
          const missing = missingRequired(checkable, new Set(answered.map(Answered.at.questionId)))
          if (missing.length > 0) {
            return yield* invalid("Required questions are not answered; nothing was saved.", missing)
          }
        }
        yield* refreshAnswerDocuments(sql, [responseId])

        // The events of this save (v1-extensions §X2.2), in the outbox with the change itself.
        const created = Option.isNone(target)
        const types: ReadonlyArray<ResponseEventType> = submission.finished
          ? (created ? ["response.created", "response.completed"] : ["response.completed"])
          : [created ? "response.created" : "response.updated"]
        const drafted = yield* responses.findById(respondent.surveyId, ResponseId.make(responseId)).pipe(
          Effect.flatMap(Effect.orDie)
        )
        // Last: the change's instant and what follows it take the survey's turn until commit.
        const now = yield* stampChange(sql, {
          surveyId: respondent.surveyId,
          responseId,
          created,
          completed: submission.finished
        })
        const response = new SurveyResponse({
          ...drafted,
          createdAt: created ? now : drafted.createdAt,
          updatedAt: now,
          completed: drafted.completed || submission.finished,
          completedAt: submission.finished ? now : drafted.completedAt
        }, { disableValidation: true })
        yield* outbox.appendAll(types.map((type) => ({
          type,
          workspaceId,
          surveyId: respondent.surveyId,
          responseId,
          data: { responseId, externalUserId: response.externalUserId, response }
        })))
        return { responseId, created } as const
      })

    const run = (respondent: RespondentContext, target: Option.Option<string>, submission: Submission) =>
      sql.withTransaction(write(respondent, target, submission)).pipe(
        Effect.catchTag("SqlError", Effect.die)
      )

    return {
      /** Starts a response (POST /respond/v1/responses). */
      create: (respondent: RespondentContext, submission: Submission) =>
        run(respondent, Option.none(), submission).pipe(Effect.withSpan("ResponseWriter.create")),
      /** Adds or replaces answers of a response this respondent started (PATCH). */
      update: (respondent: RespondentContext, responseId: string, submission: Submission) =>
        run(respondent, Option.some(responseId), submission).pipe(Effect.withSpan("ResponseWriter.update"))
    } as const
  })
}) {}
