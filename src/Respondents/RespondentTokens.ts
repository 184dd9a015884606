import { SqlClient, SqlSchema } from "@effect/sql"
import { Clock, Effect, Schema } from "effect"
import { hashToken, newOpaqueToken } from "../Auth/Token.js"
import { Unauthorized } from "../Domain/Errors.js"
import { SurveyId } from "../Domain/Ids.js"
import { toIso } from "../Domain/Time.js"

/** How long a survey page's token may keep saving answers. */
export const RESPONDENT_TOKEN_HOURS = 24

/** The answer to a respondent token that is unknown, malformed, expired or gone (401). */
export const tokenRefused = () =>
  new Unauthorized({
    message: "Send the respondentToken of a survey page as `Authorization: Bearer <respondentToken>`; it may have expired."
  })

const opaqueTokenShape = /^[A-Za-z0-9_-]{43}$/
export const isOpaqueToken = (token: string): boolean => opaqueTokenShape.test(token)

export class RespondentContext extends Schema.Class<RespondentContext>("RespondentContext")({
  tokenHash: Schema.String,
  surveyId: SurveyId,
  externalUserId: Schema.NullOr(Schema.String),
  singleResponse: Schema.Number
}) {}

export interface IssueRespondentToken {
  readonly surveyId: string
  readonly embedSessionId: string | null
  readonly externalUserId: string | null
}

/**
 * Respondent tokens: handed to a survey page (or a native app through the JSON form of the
 * page) and sent back as a bearer token to save answers. Stored hashed.
 */
export class RespondentTokens extends Effect.Service<RespondentTokens>()("Respondents/RespondentTokens", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const find = SqlSchema.findOne({
      Request: Schema.Struct({ tokenHash: Schema.String, now: Schema.String }),
      Result: RespondentContext,
      execute: (r) =>
        sql`SELECT token_hash, survey_id, external_user_id, single_response FROM respondent_tokens
            WHERE token_hash = ${r.tokenHash} AND expires_at > ${r.now}`
    })

    const issue = Effect.fn("RespondentTokens.issue")(function*(input: IssueRespondentToken) {
      const now = yield* Clock.currentTimeMillis
      const token = newOpaqueToken()
      yield* sql`INSERT INTO respondent_tokens ${
        sql.insert({
          tokenHash: hashToken(token),
          surveyId: input.surveyId,
          embedSessionId: input.embedSessionId,
          externalUserId: input.externalUserId,
          singleResponse: input.embedSessionId === null ? 0 : 1,
          createdAt: toIso(now),
          expiresAt: toIso(now + RESPONDENT_TOKEN_HOURS * 3_600_000)
        })
      }`.pipe(Effect.orDie)
      return token
    })

    const resolve = Effect.fn("RespondentTokens.resolve")(function*(token: string) {
      const now = yield* Clock.currentTimeMillis
      return yield* find({ tokenHash: hashToken(token), now: toIso(now) }).pipe(Effect.orDie)
    })

    return { issue, resolve } as const
  })
}) {}
