import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { storedValue } from "../Domain/AnswerValue.js"
import { InvalidRequest, NotFound } from "../Domain/Errors.js"
import { makeId, ResponseId } from "../Domain/Ids.js"
import { Outbox } from "../Events/Outbox.js"
import { QuestionRepo } from "../Questions/QuestionRepo.js"
import { refreshAnswerDocuments } from "../Responses/AnswerDocuments.js"
import { nextUpdatedAt } from "../Responses/ChangeClock.js"
import { ResponseRepo } from "../Responses/ResponseRepo.js"
import { dialectOf } from "../Sql/Dialect.js"
import { SurveyRepo } from "../Surveys/SurveyRepo.js"
import { missingRequired, type SubmittedAnswer, validateAnswers, type ValidationQuestion } from "./AnswerValidation.js"
import { type RespondentContext, tokenRefused } from "./RespondentTokens.js"

export interface Submission {
  readonly answers: ReadonlyArray<SubmittedAnswer>
  readonly finished: boolean
}

const invalid = (message: string, issues: ReadonlyArray<{ readonly path: string; readonly message: string }>) =>
  new InvalidRequest({ message, issues })

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
        // On PostgreSQL the token is held until the save commits: an erasure of the person deletes
        // the token first (src/Responses/ResponseDeletion.ts), so it waits for this save and erases
        // what it stored, or it came first and this save is refused like any unknown token.
        if (dialectOf(sql) === "pg") {
          const held = yield* sql`SELECT token_hash FROM respondent_tokens WHERE token_hash = ${respondent.tokenHash} FOR SHARE`
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

        // The change's instant: createdAt of a new response, updatedAt (and completedAt) of every save.
        const now = yield* nextUpdatedAt(sql, respondent.surveyId)
        const responseId = yield* Option.match(target, {
          onNone: () =>
            Effect.gen(function*() {
              if (respondent.singleResponse !== 0) {
                const started = yield* sql<{ readonly responseId: string }>`
                  SELECT response_id FROM respondent_responses WHERE token_hash = ${respondent.tokenHash} LIMIT 1`
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
                  createdAt: now,
                  updatedAt: now
                })
              }`
              yield* sql`INSERT INTO respondent_responses ${sql.insert({ responseId: id, tokenHash: respondent.tokenHash })}`
              yield* sql`UPDATE surveys SET response_count = response_count + 1 WHERE id = ${respondent.surveyId}`
              return id
            }),
          onSome: (id) =>
            Effect.gen(function*() {
              const found = yield* sql<{ readonly completed: number }>`
                SELECT r.completed FROM responses r
                JOIN respondent_responses o ON o.response_id = r.id
                WHERE r.id = ${id} AND r.survey_id = ${respondent.surveyId} AND o.token_hash = ${respondent.tokenHash}${
                // Locked on PostgreSQL: a deletion of the response in flight commits first and this save
                // then finds nothing (404), or waits for this save (src/Responses/ResponseDeletion.ts).
                sql.onDialectOrElse({ pg: () => sql` FOR UPDATE OF r`, orElse: () => sql`` })}`
              const row = found[0]
              if (row === undefined) {
                return yield* new NotFound({ message: `No response ${JSON.stringify(id.slice(0, 64))} for this respondent.` })
              }
              if (row.completed !== 0) {
                return yield* invalid("This response is already completed and cannot change.", [
                  { path: "responseId", message: "response is completed" }
                ])
              }
              yield* sql`UPDATE responses SET updated_at = ${now} WHERE id = ${id}`
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
          const answered = yield* sql<{ readonly questionId: string }>`
            SELECT question_id FROM answers WHERE response_id = ${responseId}`
          const missing = missingRequired(checkable, new Set(answered.map((a) => a.questionId)))
          if (missing.length > 0) {
            return yield* invalid("Required questions are not answered; nothing was saved.", missing)
          }
          yield* sql`UPDATE responses SET completed = 1, completed_at = ${now}, updated_at = ${now} WHERE id = ${responseId}`
        }
        yield* refreshAnswerDocuments(sql, [responseId])
        yield* sql`INSERT INTO response_changes ${
          sql.insert({ responseId, surveyId: respondent.surveyId, changedAt: now })
        }`

        // The events of this save (v1-extensions §X2.2), in the outbox with the change itself.
        const created = Option.isNone(target)
        const types: ReadonlyArray<ResponseEventType> = submission.finished
          ? (created ? ["response.created", "response.completed"] : ["response.completed"])
          : [created ? "response.created" : "response.updated"]
        const response = yield* responses.findById(respondent.surveyId, ResponseId.make(responseId)).pipe(Effect.flatMap(Effect.orDie))
        for (const type of types) {
          yield* outbox.append({
            type,
            workspaceId,
            surveyId: respondent.surveyId,
            responseId,
            data: { responseId, externalUserId: response.externalUserId, response }
          })
        }
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
