import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Authorization } from "../Auth/Authorization.js"
import { WriteAccess } from "../Auth/WriteAccess.js"
import { Count } from "../Domain/Bounds.js"
import { Forbidden, InvalidRequest } from "../Domain/Errors.js"
import { ExternalUserId } from "../Domain/Response.js"
import { acceptsUnknownFields, JsonBody } from "../Http/JsonBody.js"

const externalUserId = ExternalUserId.annotations({
  description: "The integrator's identifier of the person, as given when embed sessions were created (1 to 256 characters)."
})

export const ErasureRequest = Schema.Struct({ externalUserId }).annotations({ identifier: "ErasureRequest", ...acceptsUnknownFields })

export const Erasure = Schema.Struct({
  externalUserId,
  deletedResponses: Count.annotations({ description: "Responses deleted by this call; 0 when there were none left." })
}).annotations({ identifier: "Erasure" })

/** Erasing a respondent (v1-extensions §X2.3). */
export class ErasuresApi extends HttpApiGroup.make("erasures")
  .add(
    HttpApiEndpoint.post("create")`/erasures`
      .setPayload(ErasureRequest)
      .addSuccess(Erasure)
      .addError(InvalidRequest.Wire)
      .addError(Forbidden.Wire)
      .annotate(OpenApi.Summary, "Erase a respondent")
      .annotate(
        OpenApi.Description,
        "Deletes every response of the workspace carrying the externalUserId (as DELETE of each does, one " +
          "response.deleted event each) and the embed sessions made for it. The responses go 100 per transaction, each " +
          "with its events; after a failure half way, the same request deletes the rest. Repeating it answers " +
          "deletedResponses 0. Editor keys of the whole workspace only: a survey-limited key answers 403."
      )
  )
  .middleware(JsonBody)
  .middleware(WriteAccess)
  .middleware(Authorization)
  .annotate(OpenApi.Title, "Erasures")
  .annotate(OpenApi.Description, "Erasing every response of one person of the integrator.")
{}
