import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Authorization } from "../Auth/Authorization.js"
import { Analytics } from "../Domain/Analytics.js"
import { Forbidden, InvalidRequest, NotFound } from "../Domain/Errors.js"
import { SurveyIdParam } from "../Surveys/Api.js"

export class AnalyticsApi extends HttpApiGroup.make("analytics")
  .add(
    HttpApiEndpoint.get("get")`/surveys/${SurveyIdParam}/analytics`
      .addSuccess(Analytics)
      .addError(InvalidRequest.Wire)
      .addError(Forbidden.Wire)
      .addError(NotFound.Wire)
      .annotate(OpenApi.Summary, "Counts and per-question aggregates of a survey")
      .annotate(
        OpenApi.Description,
        "Answered from stored aggregates that a background job keeps current; a response is normally " +
          "included within 2 seconds of being written. After a change of the question list that changes what " +
          "is counted, the counters are rebuilt in the background: meanwhile the answer holds the figures " +
          "counted before the change, with `stale` true."
      )
  )
  .middleware(Authorization)
  .annotate(OpenApi.Title, "Analytics")
  .annotate(OpenApi.Description, "Counts and per-question aggregates, from stored aggregates.")
{}
