import { HttpApi, OpenApi } from "@effect/platform"
import { AnalyticsApi } from "./Analytics/Api.js"
import { AuthoringApi } from "./Authoring/Api.js"
import { KeyApi } from "./Auth/KeyApi.js"
import { EmbedSessionsApi } from "./Embeds/Api.js"
import { ErasuresApi } from "./Responses/ErasuresApi.js"
import { declareAnswers, describeWireErrors } from "./Http/OpenApiWire.js"
import { UsageApi } from "./Quota/Api.js"
import { RespondentApi } from "./Respondents/Api.js"
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
  .add(AuthoringApi)
  .add(KeyApi)
  .prefix("/api/v1")
  // Outside /api/v1 (added after the prefix): the respondent API of the survey pages.
  .add(RespondentApi)
  .annotateContext(OpenApi.annotations({
    title: "Survey Service API",
    version: "1.0.0",
    description: "Read surveys, questions, responses and analytics; create and edit surveys; manage signed webhooks; create embed sessions; " +
      "report the request quota. Every call needs `Authorization: Bearer <API_KEY>`. Errors answer " +
      "`{\"code\", \"message\"}`, and invalid_request adds `issues` (`[{\"path\", \"message\"}]`). " +
      "Two answers come from the HTTP server itself, before the service sees the request, with an empty body: " +
      "413 when a request body exceeds 1 MiB, and 431 when the request line and headers exceed 16 KiB " +
      "(in practice a URL longer than about 16,000 characters). Every field, parameter and list declares its " +
      "bounds, and a value beyond them answers 400 invalid_request.\n\n" +
      "The integration API is server-to-server: it grants no cross-origin access (no CORS headers), so a browser " +
      "page on another origin cannot call it, and a preflight (`OPTIONS`) is refused with 403 forbidden. Keep " +
      "API keys on your servers.",
    transform: (spec) =>
      declareAnswers({
        servers: [{
          url: "/",
          description: "This deployment (production, staging or local): the service that serves this document.",
          "x-internal": false
        }],
        license: { name: "Proprietary", identifier: "LicenseRef-Proprietary" }
      })(describeWireErrors(spec))
  }))
{}
