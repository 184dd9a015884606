import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect, Layer, Option, Redacted, Schema } from "effect"
import { Api } from "../Api.js"
import { tokenRefused } from "../Domain/Respondent.js"
import { answerResponse, Idempotency, idempotencyKeyOf, requestHash } from "../Http/Idempotency.js"
import { ResponseWriter } from "../Responses/ResponseWriter.js"
import { Submission } from "../Responses/Submission.js"
import { CurrentRespondent, RespondentAuth, ResponseSaved, ResponseStarted } from "./Api.js"
import { RespondentLimits } from "./RespondentLimits.js"
import { RespondentTokens } from "./RespondentTokens.js"

/**
 * Counts the request against its client address, resolves the bearer respondent token (an
 * unknown, malformed or expired one answers 401), and counts the request against its survey.
 * Past a respondent limit: 429, and nothing is read or written further.
 */
export const RespondentAuthLive = Layer.effect(
  RespondentAuth,
  Effect.gen(function*() {
    const tokens = yield* RespondentTokens
    const limits = yield* RespondentLimits
    const refused = tokenRefused()
    return {
      respondentToken: (token) =>
        Effect.gen(function*() {
          yield* limits.address
          const found = yield* tokens.resolve(Redacted.value(token).trim())
          if (Option.isNone(found)) return yield* refused
          yield* limits.survey(found.value.surveyId)
          return found.value
        })
    }
  })
)

const encodeSubmission = Schema.encodeSync(Submission)
const encodeStarted = Schema.encodeSync(ResponseStarted)
const encodeSaved = Schema.encodeSync(ResponseSaved)

/** Handlers of the respondent API (`/respond/v1`). */
export const RespondentHttpLive = HttpApiBuilder.group(Api, "respondent", (handlers) =>
  Effect.gen(function*() {
    const writer = yield* ResponseWriter
    const idempotency = yield* Idempotency
    return handlers
      .handle("start", ({ headers, payload }) =>
        Effect.gen(function*() {
          const respondent = yield* CurrentRespondent
          const key = yield* idempotencyKeyOf(headers["idempotency-key"])
          const answer = yield* idempotency.once(
            {
              scope: { _tag: "Respondent", tokenHash: respondent.tokenHash },
              key,
              request: requestHash("POST", "/respond/v1/responses", encodeSubmission(payload))
            },
            Effect.map(writer.create(respondent, payload), (saved) => ({
              status: 201,
              body: JSON.stringify(encodeStarted({ responseId: saved.responseId }))
            }))
          )
          return answerResponse(answer)
        }))
      .handle("save", ({ path, payload }) =>
        Effect.gen(function*() {
          const respondent = yield* CurrentRespondent
          const saved = yield* writer.update(respondent, path.responseId, payload)
          return HttpServerResponse.unsafeJson(encodeSaved({ responseId: saved.responseId, completed: payload.finished }))
        }))
  }))
