import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { SurveyId } from "../Domain/Ids.js"
import { RespondentContext } from "../Domain/Respondent.js"
import { inBatches } from "../Sql/Transactions.js"

/** A stored respondent token as read. */
const StoredToken = Schema.Struct({
  tokenHash: Schema.String,
  surveyId: SurveyId,
  externalUserId: Schema.NullOr(Schema.String),
  singleResponse: Schema.Number
})

const KeyRow = Schema.Struct({ secret: Schema.String })
const DeletedTokens = Schema.Array(Schema.Struct({ tokenHash: Schema.String }))
const DeletedSessions = Schema.Array(Schema.Struct({ id: Schema.String }))

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

    const signingKey = SqlSchema.single({
      Request: Schema.Void,
      Result: KeyRow,
      execute: () => sql`SELECT secret FROM service_secrets WHERE name = 'respondent-token'`
    })

    const find = SqlSchema.findOne({
      Request: Schema.Struct({ tokenHash: Schema.String, now: Schema.String }),
      Result: StoredToken,
      execute: (r) =>
        sql`SELECT token_hash, survey_id, external_user_id, single_response FROM respondent_tokens
            WHERE token_hash = ${r.tokenHash} AND expires_at > ${r.now}`
    })

    const counted = <A>(rows: Schema.Schema<ReadonlyArray<A>>) => (found: ReadonlyArray<unknown>) =>
      Effect.map(Schema.decodeUnknown(rows)(found), (deleted) => deleted.length)

    return {
      /** The secret that signs survey pages' tokens (base64url). */
      signingKey: signingKey(undefined).pipe(Effect.map((row) => row.secret), Effect.orDie),
      /** The respondent of a stored token that has not expired by `now`. */
      find: (tokenHash: string, now: string) =>
        find({ tokenHash, now }).pipe(
          Effect.map(Option.map((row) =>
            new RespondentContext({
              tokenHash: row.tokenHash,
              surveyId: row.surveyId,
              externalUserId: row.externalUserId,
              singleResponse: row.singleResponse !== 0
            }, { disableValidation: true })
          )),
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
            Effect.flatMap(counted(DeletedTokens)),
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
              SELECT id FROM embed_sessions e
              WHERE e.expires_at <= ${before}
                AND NOT EXISTS (SELECT 1 FROM respondent_tokens t WHERE t.embed_session_id = e.id)
              ORDER BY e.expires_at LIMIT ${limit}`.pipe(Effect.flatMap(Schema.decodeUnknown(DeletedSessions)))).map((row) => row.id)
            if (ids.length === 0) return 0
            // Checked again as they go: a token made meanwhile keeps its session.
            const deleted = yield* sql`DELETE FROM embed_sessions WHERE id IN ${sql.in(ids)}
              AND NOT EXISTS (SELECT 1 FROM respondent_tokens t WHERE t.embed_session_id = embed_sessions.id) RETURNING id`
            return deleted.length
          }).pipe(Effect.orDie))
    } as const
  })
}) {}
