import { HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSchema, HttpApiSecurity, OpenApi } from "@effect/platform"
import { Context, Schema } from "effect"
import { IdText } from "../Domain/Bounds.js"
import { InvalidRequest, NotFound, RateLimited, ServiceUnavailable, Unauthorized } from "../Domain/Errors.js"
import type { RespondentContext } from "../Domain/Respondent.js"
import { documentReplayHeader, IdempotencyHeaders } from "../Http/Idempotency.js"
import { JsonBody } from "../Http/JsonBody.js"
import { Submission } from "../Responses/Submission.js"

/** The respondent token of the current request, provided by `RespondentAuth`. */
export class CurrentRespondent extends Context.Tag("Respondents/CurrentRespondent")<
  CurrentRespondent,
  RespondentContext
>() {}

/**
 * `Authorization: Bearer <respondentToken>`: the token a survey page hands out (`/s/{id}`,
 * `/embed/{token}`), valid for 24 hours. Answers 401 `unauthorized` otherwise, and 429
 * `rate_limited` past a respondent limit (per client address, per survey).
 */
export class RespondentAuth extends HttpApiMiddleware.Tag<RespondentAuth>()("Respondents/RespondentAuth", {
  failure: Schema.Union(Unauthorized.Wire, RateLimited.Wire, ServiceUnavailable.Wire),
  provides: CurrentRespondent,
  security: { respondentToken: HttpApiSecurity.bearer }
}) {}

export const ResponseStarted = Schema.Struct({ responseId: IdText }).annotations({ identifier: "ResponseStarted" })

export const ResponseSaved = Schema.Struct({
  responseId: IdText,
  completed: Schema.Boolean
}).annotations({ identifier: "ResponseSaved" })

export const ResponseIdParam = IdText.annotations({
  description: "A response this token started."
})

/**
 * The respondent API (`/respond/v1`): what survey pages and native apps call to save answers.
 * Not part of the integration API; authenticated by a respondent token rather than an API key.
 */
export class RespondentApi extends HttpApiGroup.make("respondent")
  .add(
    HttpApiEndpoint.post("start")`/responses`
      .setPayload(Submission)
      .setHeaders(IdempotencyHeaders)
      .addSuccess(ResponseStarted, { status: 201 })
      .addError(InvalidRequest.Wire)
      .addError(NotFound.Wire)
      .annotate(OpenApi.Summary, "Start a response")
      .annotate(
        OpenApi.Description,
        "Saves the first answers of a new response (a token from `/embed/{token}` starts exactly one). " +
          "Safe to retry with an Idempotency-Key (per token, 24 hours)."
      )
      .annotate(OpenApi.Transform, documentReplayHeader(201))
  )
  .add(
    HttpApiEndpoint.patch("save")`/responses/${HttpApiSchema.param("responseId", ResponseIdParam)}`
      .setPayload(Submission)
      .addSuccess(ResponseSaved)
      .addError(InvalidRequest.Wire)
      .addError(NotFound.Wire)
      .annotate(OpenApi.Summary, "Save answers to a response")
      .annotate(
        OpenApi.Description,
        "Adds, replaces or removes answers of a response this token started, and finishes it when `finished` is true."
      )
  )
  .middleware(JsonBody)
  .middleware(RespondentAuth)
  .prefix("/respond/v1")
  .annotateContext(OpenApi.annotations({
    title: "Respondent API",
    description: "Saving answers from survey pages and native apps (`Authorization: Bearer <respondentToken>`, " +
      "bodies up to 256 KiB). Not part of the integration API."
  }))
{}
