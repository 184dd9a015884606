import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Authorization } from "../Auth/Authorization.js"
import { WriteAccess } from "../Auth/WriteAccess.js"
import { Timestamp, UrlText } from "../Domain/Bounds.js"
import { Forbidden, InvalidRequest, NotFound } from "../Domain/Errors.js"
import { ExternalUserId } from "../Domain/Response.js"
import { documentReplayHeader, IdempotencyHeaders } from "../Http/Idempotency.js"
import { acceptsUnknownFields, JsonBody } from "../Http/JsonBody.js"
import { SurveyIdParam } from "../Surveys/Api.js"

export class EmbedSessionRequest extends Schema.Class<EmbedSessionRequest>("EmbedSessionRequest")({
  externalUserId: ExternalUserId.annotations({
    description: "The integrator's own identifier for the user, 1 to 256 characters. Stored on the response " +
      "and included in the response.completed event."
  })
}, acceptsUnknownFields) {}

export class EmbedSession extends Schema.Class<EmbedSession>("EmbedSession")({
  embedUrl: UrlText.annotations({ description: "One-time URL to load in an iframe for the user." }),
  expiresAt: Timestamp.annotations({ description: "When the URL stops working (one hour after creation)." })
}) {}

export class EmbedSessionsApi extends HttpApiGroup.make("embedSessions")
  .add(
    HttpApiEndpoint.post("create")`/surveys/${SurveyIdParam}/embed-sessions`
      .setPayload(EmbedSessionRequest)
      .setHeaders(IdempotencyHeaders)
      .addSuccess(EmbedSession, { status: 201 })
      .addError(InvalidRequest.Wire)
      .addError(Forbidden.Wire)
      .addError(NotFound.Wire)
      .annotate(OpenApi.Summary, "Create a one-time embed URL")
      .annotate(
        OpenApi.Description,
        "Creates a URL, valid for one hour and for one load, that shows the survey to one user of the integrator. " +
          "Editor keys only; the survey must be published. Safe to retry with an Idempotency-Key (per workspace, 24 hours)."
      )
      .annotate(OpenApi.Transform, documentReplayHeader(201))
  )
  .middleware(JsonBody)
  .middleware(WriteAccess)
  .middleware(Authorization)
  .annotate(OpenApi.Title, "Embed sessions")
  .annotate(OpenApi.Description, "One-time URLs that show a survey to one of the integrator's users.")
{}
