import { Effect } from "effect"
import type { SurveyId } from "../Domain/Ids.js"
import { AggregateRepo } from "./AggregateRepo.js"
import { analyticsOf, signatureOf } from "./Compute.js"

/** A survey's analytics as the stored counters answer them (GET /surveys/{id}/analytics). */
export class AnalyticsReads extends Effect.Service<AnalyticsReads>()("Analytics/AnalyticsReads", {
  effect: Effect.map(AggregateRepo, (repo) => ({
    /** The survey's analytics, marked stale while its counters are not exact for the questions shown. */
    ofSurvey: (surveyId: SurveyId) =>
      Effect.map(Effect.orDie(repo.snapshot(surveyId)), ({ questions, rebuilding, stored }) => {
        // Counters built for another question list than the one shown are not exact for it.
        const stale = rebuilding || (stored.signature !== null && stored.signature !== signatureOf(questions))
        return analyticsOf(questions, stored.aggregates, stale)
      })
  }) as const)
}) {}
