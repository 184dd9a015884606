import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { surveyId } from "../Domain/Ids.js"
import { RespondentContext } from "../Domain/Respondent.js"
import { Reader } from "../Sql/Reader.js"
import { column, rowShape } from "../Sql/Rows.js"
import { inBatches } from "../Sql/Transactions.js"

/** A stored respondent token as read: the respondent it stands for. */
const StoredToken = rowShape({
  tokenHash: column.text("token_hash"),
  surveyId: column.map(column.text("survey_id"), surveyId),
  externalUserId: column.nullableText("external_user_id"),
  singleResponse: column.flag("single_response")
})
const byHash = `SELECT ${StoredToken.columns} FROM respondent_tokens WHERE token_hash = ? AND expires_at > ?`

const SigningKey = rowShape({ secret: column.text("secret") })
const SessionIds = rowShape({ id: column.text("id") })

/** A respondent token to store (hashed), with its embed session. */
export interface StoredRespondentToken {
  readonly tokenHash: string
  readonly surveyId: string
  readonly embedSessionId: string | null
  readonly externalUserId: string | null
  readonly singleResponse: boolean
  readonly createdAt: string
  readonly expiresAt: string
}

/**
 * The respondent tokens an embed page hands out (hashed, with their embed sessions), the key that
 * signs a survey page's tokens (migration 0015), and the purge of both tables.
 */
export class RespondentTokenRepo extends Effect.Service<RespondentTokenRepo>()("Respondents/RespondentTokenRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const reader = yield* Reader

    return {
      /** The secret that signs survey pages' tokens (base64url). */
      signingKey: sql`SELECT ${sql.literal(SigningKey.columns)} FROM service_secrets WHERE name = 'respondent-token'`.values
        .pipe(
          Effect.flatMap((rows) =>
            rows[0] === undefined
              ? Effect.dieMessage("The respondent token signing key is not stored")
              : Effect.succeed(SigningKey.at.secret(rows[0]))
          ),
          Effect.orDie
        ),
      /** The respondent of a stored token that has not expired by `now` (on the path of every respondent request). */
      find: (tokenHash: string, now: string) =>
        reader.values(byHash, [tokenHash, now]).pipe(
          Effect.map((rows) =>
            Option.map(Option.fromNullable(rows[0]), (row) => new RespondentContext(StoredToken.read(row), { disableValidation: true }))
          ),
          Effect.orDie
        ),
      insert: (token: StoredRespondentToken) =>
        sql`INSERT INTO respondent_tokens ${
          sql.insert({
            tokenHash: token.tokenHash,
            surveyId: token.surveyId,
            embedSessionId: token.embedSessionId,
            externalUserId: token.externalUserId,
            singleResponse: token.singleResponse ? 1 : 0,
            createdAt: token.createdAt,
            expiresAt: token.expiresAt
          })
        }`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),
      /** Deletes the tokens expired by `now`, WorkBatches' `purge` per statement; how many. */
      deleteExpired: (now: string) =>
        inBatches("respondent token purge", (limit) =>
          sql`
          DELETE FROM respondent_tokens WHERE token_hash IN (
            SELECT token_hash FROM respondent_tokens WHERE expires_at <= ${now} ORDER BY expires_at LIMIT ${limit})
          RETURNING token_hash`.pipe(
            Effect.map((deleted) => deleted.length),
            Effect.orDie
          )),
      /**
       * Deletes the embed sessions expired by `before` that no token refers to any more,
       * WorkBatches' `purge` per batch; how many.
       */
      deleteEmbedSessions: (before: string) =>
        inBatches("embed session purge", (limit) =>
          Effect.gen(function*() {
            // The batch's ids first, by the expiry index; then those rows by their key.
            const ids = (yield* sql`
              SELECT ${sql.literal(SessionIds.columns)} FROM embed_sessions e
              WHERE e.expires_at <= ${before}
                AND NOT EXISTS (SELECT 1 FROM respondent_tokens t WHERE t.embed_session_id = e.id)
              ORDER BY e.expires_at LIMIT ${limit}`.values).map(SessionIds.at.id)
            if (ids.length === 0) return 0
            // Checked again as they go: a token made meanwhile keeps its session.
            const deleted = yield* sql`DELETE FROM embed_sessions WHERE id IN ${sql.in(ids)}
              AND NOT EXISTS (SELECT 1 FROM respondent_tokens t WHERE t.embed_session_id = embed_sessions.id) RETURNING id`
            return deleted.length
          }).pipe(Effect.orDie))
    } as const
  })
}) {}
