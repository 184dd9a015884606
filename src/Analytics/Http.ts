import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { Analytics } from "../Domain/Analytics.js"
import { preEncoded } from "../Http/PreEncoded.js"
import { SurveyAccess } from "../Surveys/SurveyAccess.js"
import { AggregateRepo } from "./AggregateRepo.js"
import { analyticsOf, signatureOf } from "./Compute.js"

export const AnalyticsLive = HttpApiBuilder.group(Api, "analytics", (handlers) =>
  Effect.gen(function*() {
    const access = yield* SurveyAccess
    const repo = yield* AggregateRepo
    return handlers.handle("get", ({ path }) =>
      Effect.gen(function*() {
        yield* access.require(path.id)
        const { questions, rebuilding, stored } = yield* repo.snapshot(path.id).pipe(Effect.orDie)
        // Counters built for another question list than the one shown are not exact for it.
        const stale = rebuilding || (stored.signature !== null && stored.signature !== signatureOf(questions))
        return preEncoded(Analytics, analyticsOf(questions, stored.aggregates, stale))
      }))
  }))
