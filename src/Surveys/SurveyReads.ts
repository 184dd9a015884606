import { Effect } from "effect"
import { SurveyRepo } from "./SurveyRepo.js"

/**
 * Surveys as other features and the handlers read them, inside the caller's transaction when
 * there is one (a save reads the survey it counts in with its change).
 */
export class SurveyReads extends Effect.Service<SurveyReads>()("Surveys/SurveyReads", {
  effect: Effect.map(SurveyRepo, (repo) => ({
    findById: repo.findById,
    findWithQuestions: repo.findWithQuestions,
    list: repo.list
  }) as const)
}) {}
