import { Effect } from "effect"
import { QuestionRepo } from "./QuestionRepo.js"

/** A survey's current questions as other features and the handlers read them. */
export class QuestionReads extends Effect.Service<QuestionReads>()("Questions/QuestionReads", {
  effect: Effect.map(QuestionRepo, (repo) => ({
    listForSurvey: repo.listForSurvey,
    listWire: repo.listWire
  }) as const)
}) {}
