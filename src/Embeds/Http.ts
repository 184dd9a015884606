import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { AppConfig } from "../Config.js"
import { InvalidRequest } from "../Domain/Errors.js"
import { SurveyAccess } from "../Surveys/SurveyAccess.js"
import { EmbedSession } from "./Api.js"
import { EmbedSessions } from "./EmbedSessions.js"

export const EmbedSessionsLive = HttpApiBuilder.group(Api, "embedSessions", (handlers) =>
  Effect.gen(function*() {
    const access = yield* SurveyAccess
    const sessions = yield* EmbedSessions
    const config = yield* AppConfig
    return handlers.handle("create", ({ path, payload }) =>
      Effect.gen(function*() {
        const survey = yield* access.require(path.id)
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
        return new EmbedSession({
          embedUrl: `${config.publicBaseUrl}/embed/${created.token}`,
          expiresAt: created.expiresAt
        })
      }))
  })
)
