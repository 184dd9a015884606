import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { Analytics } from "../Domain/Analytics.js"
import { preEncoded } from "../Http/PreEncoded.js"
import { SurveyAccess } from "../Surveys/SurveyAccess.js"
import { AggregateRepo } from "./AggregateRepo.js"
import { analyticsOf } from "./Compute.js"

export const AnalyticsLive = HttpApiBuilder.group(Api, "analytics", (handlers) =>
  Effect.gen(function*() {
    const access = yield* SurveyAccess
    const repo = yield* AggregateRepo
    return handlers.handle("get", ({ path }) =>
      Effect.gen(function*() {
        yield* access.require(path.id)
        const { questions, stored } = yield* repo.snapshot(path.id).pipe(Effect.orDie)
        return preEncoded(Analytics, analyticsOf(questions, stored.aggregates))
      }))
  }))
