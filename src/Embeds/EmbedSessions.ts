import { SqlClient, SqlSchema } from "@effect/sql"
import { Clock, Data, Effect, Option, Schema } from "effect"
import { hashToken, newOpaqueToken } from "../Auth/Token.js"
import { makeId } from "../Domain/Ids.js"
import { toIso } from "../Domain/Time.js"

/** An embed URL works for one hour and for one load (decisions §8). */
export const EMBED_LIFETIME_MILLIS = 3_600_000

export class EmbedSessionRow extends Schema.Class<EmbedSessionRow>("EmbedSessionRow")({
  id: Schema.String,
  surveyId: Schema.String,
  workspaceId: Schema.String,
  externalUserId: Schema.String,
  expiresAt: Schema.String,
  consumedAt: Schema.NullOr(Schema.String)
}) {}

/** Why an embed token cannot be loaded. */
export type EmbedRefusal = Data.TaggedEnum<{
  Unknown: {}
  Expired: {}
  Used: {}
}>
export const EmbedRefusal = Data.taggedEnum<EmbedRefusal>()

export class EmbedSessions extends Effect.Service<EmbedSessions>()("Embeds/EmbedSessions", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const byHash = SqlSchema.findOne({
      Request: Schema.String,
      Result: EmbedSessionRow,
      execute: (tokenHash) =>
        sql`SELECT id, survey_id, workspace_id, external_user_id, expires_at, consumed_at
            FROM embed_sessions WHERE token_hash = ${tokenHash}`
    })

    const create = Effect.fn("EmbedSessions.create")(function*(input: {
      readonly surveyId: string
      readonly workspaceId: string
      readonly externalUserId: string
    }) {
      const now = yield* Clock.currentTimeMillis
      const token = newOpaqueToken()
      const expiresAt = toIso(now + EMBED_LIFETIME_MILLIS)
      yield* sql`INSERT INTO embed_sessions ${
        sql.insert({
          id: makeId("emb"),
          tokenHash: hashToken(token),
          surveyId: input.surveyId,
          workspaceId: input.workspaceId,
          externalUserId: input.externalUserId,
          createdAt: toIso(now),
          expiresAt,
          consumedAt: null
        })
      }`.pipe(Effect.orDie)
      return { token, expiresAt } as const
    })

    /** The session behind a token, if it can still be loaded. */
    const lookup = Effect.fn("EmbedSessions.lookup")(function*(token: string) {
      const found = yield* byHash(hashToken(token)).pipe(Effect.orDie)
      if (Option.isNone(found)) return yield* Effect.fail(EmbedRefusal.Unknown())
      const session = found.value
      const now = toIso(yield* Clock.currentTimeMillis)
      if (session.consumedAt !== null) return yield* Effect.fail(EmbedRefusal.Used())
      if (session.expiresAt <= now) return yield* Effect.fail(EmbedRefusal.Expired())
      return session
    })

    /** Marks the session loaded; only the first of concurrent loads wins. */
    const consume = Effect.fn("EmbedSessions.consume")(function*(session: EmbedSessionRow) {
      const now = toIso(yield* Clock.currentTimeMillis)
      const rows = yield* sql`UPDATE embed_sessions SET consumed_at = ${now}
        WHERE id = ${session.id} AND consumed_at IS NULL AND expires_at > ${now} RETURNING id`.pipe(Effect.orDie)
      if (rows.length === 0) return yield* Effect.fail(EmbedRefusal.Used())
    })

    return { create, lookup, consume } as const
  })
}) {}
