import { Effect, Option } from "effect"
import { CurrentKey } from "../Auth/CurrentKey.js"
import { Forbidden, NotFound } from "../Domain/Errors.js"
import type { SurveyId } from "../Domain/Ids.js"
import { SurveyRepo, type SurveyRow } from "./SurveyRepo.js"

/**
 * Resolves a survey id for the current key (decisions §3): another workspace, trashed
 * or missing answers 404; a survey of the workspace outside a limited key's list, 403.
 */
export class SurveyAccess extends Effect.Service<SurveyAccess>()("Surveys/SurveyAccess", {
  effect: Effect.gen(function*() {
    const surveys = yield* SurveyRepo
    const require = Effect.fnUntraced(function*(surveyId: SurveyId) {
      const key = yield* CurrentKey
      const row = yield* surveys.findById(surveyId)
      if (Option.isNone(row) || row.value.workspaceId !== key.workspaceId || row.value.trashed) {
        return yield* new NotFound({ message: `No survey with id ${JSON.stringify(surveyId.slice(0, 64))}.` })
      }
      if (key.surveyIds !== null && !key.surveyIds.has(surveyId)) {
        return yield* new Forbidden({ message: "This API key is limited to other surveys." })
      }
      return row.value satisfies SurveyRow
    })
    return { require } as const
  })
}) {}
