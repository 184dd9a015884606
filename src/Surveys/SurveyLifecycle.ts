import { Clock, Data, Effect, Option } from "effect"
import type { SurveyId } from "../Domain/Ids.js"
import { Outbox } from "../Events/Outbox.js"
import { Transactions } from "../Sql/Transactions.js"
import { SurveyRepo } from "./SurveyRepo.js"
import { nextUpdatedAt } from "./SurveyVersion.js"

export type LifecycleAction = "publish" | "close" | "trash"

export class SurveyMissing extends Data.TaggedError("SurveyMissing")<{ readonly surveyId: string }> {
  override get message() {
    return `No survey ${this.surveyId} (or it is in the trash).`
  }
}

export class TransitionRefused extends Data.TaggedError("TransitionRefused")<{
  readonly surveyId: string
  readonly from: string
  readonly action: LifecycleAction
}> {
  override get message() {
    return `Survey ${this.surveyId} is ${this.from}; it cannot ${this.action}.`
  }
}

const allowed: Record<Exclude<LifecycleAction, "trash">, ReadonlyArray<string>> = {
  publish: ["draft", "closed"],
  close: ["published"]
}

/**
 * Status moves (decisions §4): draft → published, published → closed, closed → published,
 * and trash from any status. Each move to published or closed writes its event in the same
 * transaction as the change.
 */
export class SurveyLifecycle extends Effect.Service<SurveyLifecycle>()("Surveys/SurveyLifecycle", {
  effect: Effect.gen(function*() {
    const transactions = yield* Transactions
    const surveys = yield* SurveyRepo
    const outbox = yield* Outbox

    const apply = Effect.fn("SurveyLifecycle.apply")(function*(surveyId: SurveyId, action: LifecycleAction) {
      // The move locks the survey's row, which a save of a new response takes last, and appends
      // its event after: the outbox's lock first (`lockForAppend`).
      yield* outbox.lockForAppend
      const found = yield* surveys.findById(surveyId)
      if (Option.isNone(found) || found.value.trashed) return yield* new SurveyMissing({ surveyId })
      const survey = found.value
      const now = nextUpdatedAt(yield* Clock.currentTimeMillis, survey.updatedAt)
      if (action === "trash") {
        yield* surveys.trash(surveyId, now)
        return survey
      }
      if (!allowed[action].includes(survey.status)) {
        return yield* new TransitionRefused({ surveyId, from: survey.status, action })
      }
      const status = action === "publish" ? "published" : "closed"
      // Only from the status read above: of two moves at once (PostgreSQL runs writers side by side),
      // the second finds the status changed, changes nothing and is refused like any other.
      const moved = yield* surveys.moveStatus(surveyId, survey.status, status, now)
      if (!moved) {
        const current = yield* surveys.findById(surveyId)
        if (Option.isNone(current) || current.value.trashed) return yield* new SurveyMissing({ surveyId })
        return yield* new TransitionRefused({ surveyId, from: current.value.status, action })
      }
      const updated = yield* surveys.findById(surveyId).pipe(Effect.flatMap(Effect.orDie))
      yield* outbox.append({
        type: action === "publish" ? "survey.published" : "survey.closed",
        workspaceId: survey.workspaceId,
        surveyId,
        data: { survey: updated.toApi() }
      })
      return updated
    })

    return {
      apply: (surveyId: SurveyId, action: LifecycleAction) =>
        transactions.within(apply(surveyId, action)).pipe(
          Effect.catchTag("SqlError", Effect.die)
        )
    } as const
  })
}) {}
