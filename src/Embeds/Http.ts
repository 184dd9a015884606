import { HttpApiBuilder } from "@effect/platform"
import { Effect, Schema } from "effect"
import { Api } from "../Api.js"
import { AppConfig } from "../Config.js"
import { InvalidRequest } from "../Domain/Errors.js"
import { SurveyAccess } from "../Surveys/SurveyAccess.js"
import { answerResponse, Idempotency, idempotencyKeyOf, requestHash } from "../Http/Idempotency.js"
import { EmbedSession, EmbedSessionRequest } from "./Api.js"
import { EmbedSessions } from "./EmbedSessions.js"

const encodeSession = Schema.encodeSync(EmbedSession)
const encodeRequest = Schema.encodeSync(EmbedSessionRequest)

export const EmbedSessionsLive = HttpApiBuilder.group(Api, "embedSessions", (handlers) =>
  Effect.gen(function*() {
    const access = yield* SurveyAccess
    const sessions = yield* EmbedSessions
    const config = yield* AppConfig
    const idempotency = yield* Idempotency
    return handlers.handle("create", ({ headers, path, payload }) =>
      Effect.gen(function*() {
        const key = yield* idempotencyKeyOf(headers["idempotency-key"])
        const survey = yield* access.require(path.id)
        const create = Effect.gen(function*() {
          if (survey.status !== "published") {
            return yield* new InvalidRequest({
              message: `The survey is ${survey.status}; embed sessions can be created only for a published survey.`,
              issues: [{ path: "id", message: `survey is ${survey.status}, not published` }]
            })
          }
          const created = yield* sessions.create({
            surveyId: survey.id,
            workspaceId: survey.workspaceId,
            externalUserId: payload.externalUserId
          })
          const session = encodeSession(
            new EmbedSession({ embedUrl: `${config.publicBaseUrl}/embed/${created.token}`, expiresAt: created.expiresAt })
          )
          return { status: 201, body: JSON.stringify(session) }
        })
        const answer = yield* idempotency.once({
          scope: { _tag: "Workspace", workspaceId: survey.workspaceId },
          key,
          request: requestHash("POST", `/surveys/${survey.id}/embed-sessions`, encodeRequest(payload)),
          sealed: true
        }, create)
        return answerResponse(answer)
      }))
  })
)
