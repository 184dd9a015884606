import { Clock, Effect, Option } from "effect"
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import { hashToken, newOpaqueToken } from "../Auth/Token.js"
import { SurveyId } from "../Domain/Ids.js"
import { RespondentContext } from "../Domain/Respondent.js"
import { toIso } from "../Domain/Time.js"
import { RespondentTokenRepo } from "./RespondentTokenRepo.js"

/** How long a survey page's token may keep saving answers. */
export const RESPONDENT_TOKEN_HOURS = 24

const opaqueTokenShape = /^[A-Za-z0-9_-]{43}$/
export const isOpaqueToken = (token: string): boolean => opaqueTokenShape.test(token)

/**
 * `p1.<survey id>.<issue instant, base36 ms>.<16 random bytes>.<HMAC-SHA256 of the rest>`, each
 * part base64url but the instant: a survey page's token, different on every load.
 */
const signedTokenShape = /^p1\.([A-Za-z0-9_-]{1,400})\.([0-9a-z]{1,12})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/

/** A survey page token's parts, when it has the shape of one. */
const signedParts = (token: string) => {
  const parts = signedTokenShape.exec(token)
  const [, survey, issued, nonce, mac] = parts ?? []
  if (survey === undefined || issued === undefined || nonce === undefined || mac === undefined) return undefined
  return { surveyId: Buffer.from(survey, "base64url").toString("utf8"), issuedAt: parseInt(issued, 36), nonce, mac }
}

export interface IssueRespondentToken {
  readonly surveyId: string
  readonly embedSessionId: string | null
  readonly externalUserId: string | null
}

/**
 * Respondent tokens: handed to a survey page (or a native app through the JSON form of the
 * page) and sent back as a bearer token to save answers. A token of `/s/{surveyId}` is signed
 * with the database's key (migration 0015) and stored nowhere, so that loading a page writes
 * nothing; its save's `tokenHash` is the hash of the token as for any other. A token of
 * `/embed/{token}` is stored (hashed) with its embed session: its load is spent with it, and an
 * erasure of the person deletes it.
 */
export class RespondentTokens extends Effect.Service<RespondentTokens>()("Respondents/RespondentTokens", {
  effect: Effect.gen(function*() {
    const repo = yield* RespondentTokenRepo
    const key = Buffer.from(yield* repo.signingKey, "base64url")
    const macOf = (surveyId: string, issuedAt: number, nonce: string) =>
      createHmac("sha256", key).update(`respondent-page\n${surveyId}\n${issuedAt}\n${nonce}`).digest()

    const issue = Effect.fn("RespondentTokens.issue")(function*(input: IssueRespondentToken) {
      const now = yield* Clock.currentTimeMillis
      const token = newOpaqueToken()
      yield* repo.insert({
        tokenHash: hashToken(token),
        surveyId: input.surveyId,
        embedSessionId: input.embedSessionId,
        externalUserId: input.externalUserId,
        singleResponse: input.embedSessionId !== null,
        createdAt: toIso(now),
        expiresAt: toIso(now + RESPONDENT_TOKEN_HOURS * 3_600_000)
      })
      return token
    })

    /** A token of `/s/{surveyId}`, good for 24 hours from now: nothing is stored. */
    const issuePage = Effect.fn("RespondentTokens.issuePage")(function*(surveyId: SurveyId) {
      const now = yield* Clock.currentTimeMillis
      const nonce = randomBytes(16).toString("base64url")
      const mac = macOf(surveyId, now, nonce).toString("base64url")
      return `p1.${Buffer.from(surveyId, "utf8").toString("base64url")}.${now.toString(36)}.${nonce}.${mac}`
    })

    const verified = (token: string, now: number): Option.Option<RespondentContext> => {
      const parts = signedParts(token)
      if (parts === undefined || !Number.isSafeInteger(parts.issuedAt)) return Option.none()
      // As a stored token's expiry, the issuing process's clock decides: a clock set back does not refuse it.
      if (parts.issuedAt + RESPONDENT_TOKEN_HOURS * 3_600_000 <= now) return Option.none()
      const given = Buffer.from(parts.mac, "base64url")
      const expected = macOf(parts.surveyId, parts.issuedAt, parts.nonce)
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return Option.none()
      return Option.some(
        new RespondentContext({
          tokenHash: hashToken(token),
          surveyId: SurveyId.make(parts.surveyId),
          externalUserId: null,
          singleResponse: false
        }, { disableValidation: true })
      )
    }

    /** The respondent a token stands for: none when it is unknown, malformed, forged or expired. */
    const resolve = Effect.fn("RespondentTokens.resolve")(function*(token: string) {
      const now = yield* Clock.currentTimeMillis
      if (isOpaqueToken(token)) return yield* repo.find(hashToken(token), toIso(now))
      return verified(token, now)
    })

    return { issue, issuePage, resolve } as const
  })
}) {}
