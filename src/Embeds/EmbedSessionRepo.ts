import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { SurveyId, WorkspaceId } from "../Domain/Ids.js"

/** An embed session as stored: its token only as a hash. */
export class EmbedSessionRow extends Schema.Class<EmbedSessionRow>("EmbedSessionRow")({
  id: Schema.String,
  surveyId: SurveyId,
  workspaceId: WorkspaceId,
  externalUserId: Schema.String,
  expiresAt: Schema.String,
  consumedAt: Schema.NullOr(Schema.String)
}) {}

/** The rows of `embed_sessions`. */
export class EmbedSessionRepo extends Effect.Service<EmbedSessionRepo>()("Embeds/EmbedSessionRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const byHash = SqlSchema.findOne({
      Request: Schema.String,
      Result: EmbedSessionRow,
      execute: (tokenHash) =>
        sql`SELECT id, survey_id, workspace_id, external_user_id, expires_at, consumed_at
            FROM embed_sessions WHERE token_hash = ${tokenHash}`
    })

    /** The session whose token has this hash. */
    const findByTokenHash = (tokenHash: string): Effect.Effect<Option.Option<EmbedSessionRow>> =>
      byHash(tokenHash).pipe(Effect.orDie)

    const insert = (session: {
      readonly id: string
      readonly tokenHash: string
      readonly surveyId: string
      readonly workspaceId: string
      readonly externalUserId: string
      readonly createdAt: string
      readonly expiresAt: string
    }) => sql`INSERT INTO embed_sessions ${sql.insert({ ...session, consumedAt: null })}`.pipe(Effect.asVoid, Effect.orDie)

    /** Marks the session consumed at `now` unless it was consumed or expired by then; true when it was marked. */
    const consume = (id: string, now: string) =>
      sql`UPDATE embed_sessions SET consumed_at = ${now}
        WHERE id = ${id} AND consumed_at IS NULL AND expires_at > ${now} RETURNING id`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie
      )

    return { findByTokenHash, insert, consume } as const
  })
}) {}
