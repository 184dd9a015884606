import { Clock, Data, Effect, Either } from "effect"
import { CounterAdjustments } from "../Analytics/CounterAdjustments.js"
import { CurrentKey } from "../Auth/CurrentKey.js"
import { Forbidden, InvalidRequest, type Issue, NotFound, PreconditionFailed } from "../Domain/Errors.js"
import { makeId, type SurveyId, surveyId as brandSurveyId } from "../Domain/Ids.js"
import type { QuestionInput } from "../Domain/Question.js"
import { toIso } from "../Domain/Time.js"
import { Outbox } from "../Events/Outbox.js"
import { invalidRequestOf } from "../Http/Issues.js"
import { QuestionReads } from "../Questions/QuestionReads.js"
import { type DatabaseError, Transactions } from "../Sql/Transactions.js"
import { SurveyAccess } from "../Surveys/SurveyAccess.js"
import { SurveyLifecycle } from "../Surveys/SurveyLifecycle.js"
import { SurveyReads } from "../Surveys/SurveyReads.js"
import type { SurveyRow } from "../Surveys/SurveyRepo.js"
import { etagOf, ifMatchAdmits, nextUpdatedAt } from "../Surveys/SurveyVersion.js"
import { AuthoringRepo, type QuestionWrite } from "./AuthoringRepo.js"
import { questionWrites } from "./QuestionRules.js"

/** Another change to the survey committed between this one's read and its write. */
class VersionMoved extends Data.TaggedError("VersionMoved") {}

export interface NewSurveyInput {
  readonly title: string
  readonly description?: string | null | undefined
  readonly questions?: ReadonlyArray<QuestionInput> | undefined
}

export interface SurveyChangeInput {
  readonly title?: string | undefined
  readonly description?: string | null | undefined
}

/** What a change may fail with inside its transaction. */
type ChangeError = InvalidRequest | NotFound | PreconditionFailed | VersionMoved | DatabaseError

const invalid = (message: string, issues: ReadonlyArray<Issue>) => new InvalidRequest({ message, issues })

const invalidQuestions = (issues: ReadonlyArray<Issue>) => invalidRequestOf(issues)

const stale = () =>
  new PreconditionFailed({
    message: "The survey changed since the version named by If-Match; read it again and retry. Nothing changed."
  })

/**
 * The current key when it is a key of the whole workspace; a key limited to some surveys is
 * refused (403) before anything is read or replayed, a stored creation answer included.
 */
export const wholeWorkspaceKey = Effect.flatMap(CurrentKey, (key) =>
  key.surveyIds === null
    ? Effect.succeed(key)
    : Effect.fail(
      new Forbidden({ message: "This API key is limited to some surveys; creating a survey needs a key of the whole workspace." })
    ))

/**
 * Creating and changing surveys over the API (v1-extensions §X7). Every change is one
 * transaction that first checks the survey's version (`If-Match`) and then moves it, so that a
 * stale change fails whole and two changes to one survey never interleave.
 */
export class Authoring extends Effect.Service<Authoring>()("Authoring/Authoring", {
  effect: Effect.gen(function*() {
    const transactions = yield* Transactions
    const repo = yield* AuthoringRepo
    const surveys = yield* SurveyReads
    const questions = yield* QuestionReads
    const access = yield* SurveyAccess
    const lifecycle = yield* SurveyLifecycle
    const outbox = yield* Outbox
    const counters = yield* CounterAdjustments

    const reread = (id: SurveyId) => surveys.findById(id).pipe(Effect.flatMap(Effect.orDie))

    /**
     * `change` inside a transaction, on the survey as the key may see it, once `If-Match` admits
     * its version; `change` gets the version to move to. Without `If-Match`, a change that finds
     * the survey moved by another one is run again on the new state.
     */
    const write = <A, R>(
      id: SurveyId,
      ifMatch: string | undefined,
      change: (survey: SurveyRow, next: string) => Effect.Effect<A, ChangeError, R>,
      lockFirst: Effect.Effect<void, DatabaseError> = Effect.void
    ) =>
      transactions.within(Effect.gen(function*() {
        yield* lockFirst
        const survey = yield* access.require(id)
        if (!ifMatchAdmits(ifMatch, etagOf(survey.updatedAt))) return yield* stale()
        const next = nextUpdatedAt(yield* Clock.currentTimeMillis, survey.updatedAt)
        return yield* change(survey, next)
      })).pipe(
        Effect.catchTag("SqlError", Effect.die),
        Effect.retry({ while: (e) => e._tag === "VersionMoved" && ifMatch === undefined, times: 5 }),
        Effect.catchTag("VersionMoved", () => stale())
      )

    const claim = (survey: SurveyRow, next: string) =>
      Effect.flatMap(repo.claim(survey.id, survey.updatedAt, next), (claimed) =>
        claimed ? Effect.void : Effect.fail(new VersionMoved()))

    /** The new list's checks that need what is stored: a question with answers keeps its type. */
    const storeQuestions = (survey: SurveyRow, writes: ReadonlyArray<QuestionWrite>) =>
      Effect.gen(function*() {
        const stored = yield* repo.questionsOf(survey.id)
        const storedType = new Map(stored.map((q) => [q.id, q.type]))
        const retyped = writes.flatMap((q, i) => {
          const type = storedType.get(q.id)
          return type !== undefined && type !== q.type ? [{ id: q.id, index: i, from: type }] : []
        })
        const answered = yield* repo.answered(survey.id, retyped.map((r) => r.id))
        const issues = retyped.filter((r) => answered.has(r.id)).map((r): Issue => ({
          path: `questions.${r.index}.type`,
          message: `question ${r.id} has answers as ${r.from}; its type cannot change`
        }))
        if (issues.length > 0) return yield* invalidQuestions(issues)
        const kept = new Set(writes.map((q) => q.id))
        yield* repo.upsertQuestions(survey.id, writes)
        yield* repo.deleteQuestions(survey.id, stored.filter((q) => !q.deleted && !kept.has(q.id)).map((q) => q.id))
        yield* repo.recountQuestions(survey.id)
      })

    const writesOf = (inputs: ReadonlyArray<QuestionInput>) =>
      Either.match(questionWrites(inputs), {
        onLeft: (issues) => Effect.fail(invalidQuestions(issues)),
        onRight: Effect.succeed
      })

    const create = Effect.fn("Authoring.create")(function*(input: NewSurveyInput) {
      const key = yield* wholeWorkspaceKey
      const writes = yield* writesOf(input.questions ?? [])
      const id = brandSurveyId(makeId("srv"))
      const createdAt = toIso(yield* Clock.currentTimeMillis)
      return yield* transactions.within(Effect.gen(function*() {
        yield* repo.insertSurvey({
          id,
          workspaceId: key.workspaceId,
          title: input.title,
          description: input.description ?? null,
          createdAt
        })
        yield* repo.upsertQuestions(id, writes)
        yield* repo.recountQuestions(id)
        return yield* reread(id)
      })).pipe(Effect.catchTag("SqlError", Effect.die))
    })

    const update = Effect.fn("Authoring.update")(function*(id: SurveyId, ifMatch: string | undefined, input: SurveyChangeInput) {
      return yield* write(id, ifMatch, (survey, next) =>
        Effect.gen(function*() {
          yield* claim(survey, next)
          yield* repo.setDetails(
            survey.id,
            input.title ?? survey.title,
            input.description === undefined ? survey.description : input.description
          )
          return yield* reread(survey.id)
        }))
    })

    const replaceQuestions = Effect.fn("Authoring.replaceQuestions")(
      function*(id: SurveyId, ifMatch: string | undefined, inputs: ReadonlyArray<QuestionInput>) {
        const writes = yield* writesOf(inputs)
        // The survey's row locked first, then read: saves in flight are done, and the version read
        // is the one to claim.
        return yield* write(id, ifMatch, (survey, next) =>
          Effect.gen(function*() {
            yield* claim(survey, next)
            yield* counters.editingQuestions(survey.id, storeQuestions(survey, writes))
            return { survey: yield* reread(survey.id), questions: yield* questions.listWire(survey.id) }
          }), repo.lockQuestions(id))
      }
    )

    /**
     * Publish or close through the lifecycle the CLI uses (same events, same transaction). A move
     * to the status the survey already has changes nothing; publishing needs a question.
     */
    const move = Effect.fn("Authoring.move")(function*(id: SurveyId, ifMatch: string | undefined, action: "publish" | "close") {
      return yield* write(id, ifMatch, (survey, next) =>
        Effect.gen(function*() {
          const target = action === "publish" ? "published" : "closed"
          if (survey.status === target) return survey
          if (action === "publish" && survey.questionCount === 0) {
            return yield* invalid("A survey without a question cannot be published.", [
              { path: "id", message: "the survey has no question" }
            ])
          }
          // The claim locks the survey's row and the move appends its event after: the outbox's
          // lock first, as src/Surveys/SurveyLifecycle.ts explains.
          yield* outbox.lockForAppend
          yield* claim(survey, next)
          return yield* lifecycle.apply(survey.id, action).pipe(Effect.catchTags({
            TransitionRefused: (refused) => invalid(refused.message, [{ path: "id", message: `survey is ${refused.from}` }]),
            SurveyMissing: () => new NotFound({ message: `No survey with id ${JSON.stringify(survey.id)}.` })
          }))
        }))
    })

    const trash = Effect.fn("Authoring.trash")(function*(id: SurveyId, ifMatch: string | undefined) {
      yield* write(id, ifMatch, (survey, next) =>
        Effect.gen(function*() {
          yield* claim(survey, next)
          yield* lifecycle.apply(survey.id, "trash").pipe(Effect.catchTags({
            TransitionRefused: (refused) => invalid(refused.message, [{ path: "id", message: `survey is ${refused.from}` }]),
            SurveyMissing: () => new NotFound({ message: `No survey with id ${JSON.stringify(survey.id)}.` })
          }))
        }))
    })

    return { create, update, replaceQuestions, move, trash } as const
  })
}) {}
