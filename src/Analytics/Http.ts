import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { Analytics } from "../Domain/Analytics.js"
import { preEncoded } from "../Http/PreEncoded.js"
import { SurveyAccess } from "../Surveys/SurveyAccess.js"
import { AnalyticsReads } from "./AnalyticsReads.js"

export const AnalyticsLive = HttpApiBuilder.group(Api, "analytics", (handlers) =>
  Effect.gen(function*() {
    const access = yield* SurveyAccess
    const analytics = yield* AnalyticsReads
    return handlers.handle("get", ({ path }) =>
      Effect.gen(function*() {
        yield* access.require(path.id)
        return preEncoded(Analytics, yield* analytics.ofSurvey(path.id))
      }))
  }))
