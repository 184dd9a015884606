import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Authorization } from "../Auth/Authorization.js"
import { ServiceUnavailable } from "../Domain/Errors.js"

/** api-v1 §2.9. */
export const Usage = Schema.Struct({
  burstLimit: Schema.Int.annotations({ description: "Requests allowed inside the burst window." }),
  burstWindowMinutes: Schema.Int.annotations({ description: "Length of the sliding burst window in minutes." }),
  dailyLimit: Schema.Int.annotations({ description: "Requests per UTC day." }),
  usedToday: Schema.Int.annotations({ description: "Requests spent in the current UTC day, this one included." }),
  remainingToday: Schema.Int.annotations({ description: "dailyLimit minus usedToday." }),
  monthlyLimit: Schema.Int.annotations({ description: "Requests per UTC calendar month." }),
  resetAt: Schema.String.annotations({ description: "When the daily counter resets: the next UTC midnight." })
}).annotations({ identifier: "Usage", title: "Usage" })

export class UsageApi extends HttpApiGroup.make("usage")
  .add(
    HttpApiEndpoint.get("get", "/usage")
      .addSuccess(Usage)
      .addError(ServiceUnavailable.Wire)
      .annotate(
        OpenApi.Description,
        "The request quota of the key's creator account, shared by all of its keys. This call counts against it."
      )
      .annotate(OpenApi.Summary, "Request quota and what is left of it")
  )
  .middleware(Authorization)
  .annotate(OpenApi.Title, "Usage")
{}
