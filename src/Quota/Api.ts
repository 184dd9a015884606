import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Authorization } from "../Auth/Authorization.js"
import { Count, Timestamp } from "../Domain/Bounds.js"
import { ServiceUnavailable } from "../Domain/Errors.js"

/** api-v1 §2.9. */
export const Usage = Schema.Struct({
  burstLimit: Count.annotations({ description: "Requests allowed inside the burst window." }),
  burstWindowMinutes: Count.annotations({ description: "Length of the sliding burst window in minutes." }),
  dailyLimit: Count.annotations({ description: "Requests per UTC day." }),
  usedToday: Count.annotations({ description: "Requests spent in the current UTC day, this one included." }),
  remainingToday: Count.annotations({ description: "dailyLimit minus usedToday." }),
  monthlyLimit: Count.annotations({ description: "Requests per UTC calendar month." }),
  resetAt: Timestamp.annotations({ description: "When the daily counter resets: the next UTC midnight." })
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
  .annotate(OpenApi.Description, "The request quota of the key's creator; every answer also reports it in RateLimit-* headers.")
{}
