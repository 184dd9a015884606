import { HttpApi, OpenApi } from "@effect/platform"
import { AnalyticsApi } from "./Analytics/Api.js"
import { EmbedSessionsApi } from "./Embeds/Api.js"
import { ErasuresApi } from "./Erasures/Api.js"
import { UsageApi } from "./Quota/Api.js"
import { QuestionsApi } from "./Questions/Api.js"
import { ResponsesApi } from "./Responses/Api.js"
import { SurveysApi } from "./Surveys/Api.js"
import { SurveyWebhookApi, WorkspaceWebhooksApi } from "./Webhooks/Api.js"

/** The integration API, `/api/v1`: one group per section of the contract. */
export class Api extends HttpApi.make("survey-service")
  .add(SurveysApi)
  .add(QuestionsApi)
  .add(ResponsesApi)
  .add(EmbedSessionsApi)
  .add(AnalyticsApi)
  .add(UsageApi)
  .add(SurveyWebhookApi)
  .add(WorkspaceWebhooksApi)
  .add(ErasuresApi)
  .prefix("/api/v1")
  .annotateContext(OpenApi.annotations({
    title: "Survey Service API",
    version: "1.0.0",
    description: "Read surveys, questions, responses and analytics; manage signed webhooks; create embed sessions; " +
      "report the request quota. Every call needs `Authorization: Bearer <API_KEY>`. Errors answer " +
      "`{\"code\", \"message\"}` (with `issues` for invalid_request)."
  }))
{}
