import { Clock, Effect, Option } from "effect"
import { InvalidRequest, type Issue, NotFound } from "../Domain/Errors.js"
import { makeId, ResponseId, type SurveyId, type WorkspaceId } from "../Domain/Ids.js"
import { type RespondentContext, tokenRefused } from "../Domain/Respondent.js"
import { SurveyResponse } from "../Domain/Response.js"
import { toIso } from "../Domain/Time.js"
import { Outbox } from "../Events/Outbox.js"
import type { QuestionRow } from "../Questions/QuestionRepo.js"
import { type DatabaseError, Transactions } from "../Sql/Transactions.js"
import { SurveyReads } from "../Surveys/SurveyReads.js"
import { answerDocument } from "./AnswerDocumentRepo.js"
import { type CheckedAnswer, missingRequired, validateAnswers, type ValidationQuestion } from "./AnswerValidation.js"
import { ChangeClockRepo } from "./ChangeClockRepo.js"
import { ResponseRepo, startedResponse } from "./ResponseRepo.js"
import { ResponseWriteRepo } from "./ResponseWriteRepo.js"
import type { Submission } from "./Submission.js"

const invalid = (message: string, issues: ReadonlyArray<Issue>) => new InvalidRequest({ message, issues })

const validationQuestion = (row: QuestionRow): ValidationQuestion => ({
  id: row.id,
  type: row.type,
  required: row.required,
  allowMultiple: row.allowMultiple,
  options: row.options
})

/** The response a save writes to, and, when the save started it, that response as it stands. */
interface Target {
  readonly id: ResponseId
  readonly started: Option.Option<ReturnType<typeof startedResponse>>
}

type ResponseEventType = "response.created" | "response.updated" | "response.completed"

/**
 * The events of a save (v1-extensions §X2.2): `response.created` for the first save,
 * `response.updated` for a later one that does not complete it, `response.completed` for the
 * completing one.
 */
const eventTypes = (created: boolean, finished: boolean): ReadonlyArray<ResponseEventType> =>
  finished
    ? (created ? ["response.created", "response.completed"] : ["response.completed"])
    : [created ? "response.created" : "response.updated"]

/** The question ids a response has answers to. */
const answeredQuestions = (response: SurveyResponse): ReadonlySet<string> =>
  new Set(response.answers.flatMap((answer) => answer.fieldId === null ? [] : [answer.fieldId]))

/**
 * Saves and completes respondents' responses. One transaction per call: the response and its
 * answers, the survey's response count, a `response_changes` row, and the save's events, so that
 * either all of it is stored or none of it.
 */
export class ResponseWriter extends Effect.Service<ResponseWriter>()("Responses/ResponseWriter", {
  effect: Effect.gen(function*() {
    const transactions = yield* Transactions
    const saves = yield* ResponseWriteRepo
    const changeClock = yield* ChangeClockRepo
    const surveys = yield* SurveyReads
    const responses = yield* ResponseRepo
    const outbox = yield* Outbox

    /**
     * The token was checked before the save's transaction began: read again inside it, so that an
     * erasure of the person (which deletes the token first, src/Responses/ResponseDeletion.ts)
     * either waits for this save and erases what it stored, or came first and this save is
     * refused like any unknown token. A token good for one response is held exclusively by a
     * save that may start one, so that of two such saves at once the second finds the first's
     * response. A survey page's token (no person, any number of responses) is signed, not
     * stored: nothing to hold.
     */
    const holdToken = (respondent: RespondentContext, target: Option.Option<ResponseId>) =>
      respondent.externalUserId === null && !respondent.singleResponse
        ? Effect.void
        : Effect.flatMap(
          saves.holdToken(respondent.tokenHash, Option.isNone(target) && respondent.singleResponse),
          (held) => held ? Effect.void : Effect.fail(tokenRefused())
        )

    /** The survey's workspace and its current questions, read together, while the survey accepts responses. */
    const acceptingSurvey = (surveyId: SurveyId) =>
      Effect.flatMap(
        surveys.findWithQuestions(surveyId),
        (found): Effect.Effect<
          { readonly workspaceId: WorkspaceId; readonly questions: ReadonlyArray<QuestionRow> },
          InvalidRequest
        > => {
          if (Option.isSome(found) && !found.value.survey.trashed && found.value.survey.status === "published") {
            const { questions, survey } = found.value
            return Effect.succeed({ workspaceId: survey.workspaceId, questions })
          }
          const status = Option.match(found, {
            onNone: () => "gone",
            onSome: ({ survey }) => survey.trashed ? "gone" : survey.status
          })
          return Effect.fail(invalid("The survey is no longer accepting responses.", [
            { path: "surveyId", message: `survey is ${status}, not published` }
          ]))
        }
      )

    /** The submitted answers checked against the survey's questions, in their stored form. */
    const validated = (questions: ReadonlyArray<QuestionRow>, submission: Submission) => {
      const checkable = questions.map(validationQuestion)
      const { accepted, issues } = validateAnswers(checkable, submission.answers)
      return issues.length > 0
        ? Effect.fail(invalid("Some answers are not valid; nothing was saved.", issues))
        : Effect.succeed({ checkable, accepted })
    }

    /**
     * The response a save writes to: a new one (stored here with its first answers), or the one
     * named, if the respondent started it and it is not completed.
     */
    const resolveTarget = (
      respondent: RespondentContext,
      target: Option.Option<ResponseId>,
      accepted: ReadonlyArray<CheckedAnswer>,
      questions: ReadonlyArray<QuestionRow>
    ): Effect.Effect<
      Target,
      InvalidRequest | NotFound | DatabaseError
    > =>
      Option.match(target, {
        onNone: () =>
          Effect.gen(function*() {
            if (respondent.singleResponse && (yield* saves.startedBy(respondent.tokenHash))) {
              return yield* invalid("This embed link already started a response; continue it with PATCH.", [
                { path: "", message: "one response per embed session" }
              ])
            }
            const started = {
              id: ResponseId.make(makeId("rsp")),
              surveyId: respondent.surveyId,
              externalUserId: respondent.externalUserId,
              draftedAt: toIso(yield* Clock.currentTimeMillis)
            }
            const stored = yield* saves.start({ ...started, tokenHash: respondent.tokenHash }, accepted)
            // Read back as it stands: what this statement stored, beside the questions this transaction read.
            return { id: started.id, started: Option.some(startedResponse(started, stored, questions)) }
          }),
        onSome: (id) =>
          Effect.gen(function*() {
            const found = yield* saves.findStarted(id, respondent.surveyId, respondent.tokenHash)
            if (Option.isNone(found)) {
              return yield* new NotFound({ message: `No response ${JSON.stringify(id.slice(0, 64))} for this respondent.` })
            }
            if (found.value.completed) {
              return yield* invalid("This response is already completed and cannot change.", [
                { path: "responseId", message: "response is completed" }
              ])
            }
            return { id, started: Option.none() }
          })
      })

    /**
     * Stores the answers of a response the save did not start (a new response's were stored with
     * it, and are known as they stand), then reads the response as it now stands, once: a
     * finishing save is checked against its answers, the save's events carry it, and its
     * rendering (stored with the change's stamps) is made from the same answer rows.
     */
    const storeAnswers = (
      surveyId: SurveyId,
      target: Target,
      accepted: ReadonlyArray<CheckedAnswer>,
      finishing: Option.Option<ReadonlyArray<ValidationQuestion>>
    ) =>
      Effect.gen(function*() {
        const responseId = target.id
        const { answers, response: stored } = Option.isSome(target.started)
          ? target.started.value
          : yield* Effect.zipRight(
            saves.storeAnswers(responseId, accepted),
            Effect.flatMap(responses.findWithAnswers(surveyId, responseId), Effect.orDie)
          )
        if (Option.isSome(finishing)) {
          const missing = missingRequired(finishing.value, answeredQuestions(stored))
          if (missing.length > 0) return yield* invalid("Required questions are not answered; nothing was saved.", missing)
        }
        return { stored, rendering: answerDocument(responseId, answers) } as const
      })

    /**
     * Stamps the change and appends the save's events, in the outbox with the change itself, and
     * counts a new response with them: the survey's row is locked by the last statement only, so
     * that the survey's new responses wait for one another one round trip at most.
     */
    const record = (
      respondent: RespondentContext,
      survey: { readonly workspaceId: WorkspaceId },
      saved: { readonly stored: SurveyResponse; readonly rendering: string },
      created: boolean,
      finished: boolean
    ) =>
      Effect.gen(function*() {
        const { workspaceId } = survey
        const { rendering, stored } = saved
        const responseId = stored.id
        const now = yield* changeClock.stamp({ surveyId: respondent.surveyId, responseId, created, completed: finished, rendering })
        const response = new SurveyResponse({
          ...stored,
          createdAt: created ? now : stored.createdAt,
          updatedAt: now,
          completed: stored.completed || finished,
          completedAt: finished ? now : stored.completedAt
        }, { disableValidation: true })
        yield* outbox.appendAll(
          eventTypes(created, finished).map((type) => ({
            type,
            workspaceId,
            surveyId: respondent.surveyId,
            responseId,
            data: { responseId, externalUserId: response.externalUserId, response }
          })),
          created ? changeClock.countingCreated(respondent.surveyId) : undefined
        )
      })

    const write = (respondent: RespondentContext, target: Option.Option<ResponseId>, submission: Submission) =>
      Effect.gen(function*() {
        yield* holdToken(respondent, target)
        yield* saves.holdSurvey(respondent.surveyId)
        const survey = yield* acceptingSurvey(respondent.surveyId)
        const { questions } = survey
        const { accepted, checkable } = yield* validated(questions, submission)
        const resolved = yield* resolveTarget(respondent, target, accepted, questions)
        const finishing = submission.finished ? Option.some(checkable) : Option.none()
        const created = Option.isNone(target)
        const saved = yield* storeAnswers(respondent.surveyId, resolved, accepted, finishing)
        yield* record(respondent, survey, saved, created, submission.finished)
        return { responseId: resolved.id, created } as const
      })

    const run = (respondent: RespondentContext, target: Option.Option<ResponseId>, submission: Submission) =>
      transactions.withinOrDie(write(respondent, target, submission))

    return {
      /** Starts a response (POST /respond/v1/responses). */
      create: (respondent: RespondentContext, submission: Submission) =>
        run(respondent, Option.none(), submission).pipe(Effect.withSpan("ResponseWriter.create")),
      /** Adds or replaces answers of a response this respondent started (PATCH). */
      update: (respondent: RespondentContext, responseId: string, submission: Submission) =>
        run(respondent, Option.some(ResponseId.make(responseId)), submission).pipe(Effect.withSpan("ResponseWriter.update"))
    } as const
  })
}) {}
