import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { surveyId, workspaceId } from "../Domain/Ids.js"
import { Reader } from "../Sql/Reader.js"
import { column, rowShape, type RowOf } from "../Sql/Rows.js"

/** An embed session as stored: its token only as a hash. */
const EmbedSessionColumns = rowShape({
  id: column.text("id"),
  surveyId: column.map(column.text("survey_id"), surveyId),
  workspaceId: column.map(column.text("workspace_id"), workspaceId),
  externalUserId: column.text("external_user_id"),
  expiresAt: column.text("expires_at"),
  consumedAt: column.nullableText("consumed_at")
})
export type EmbedSessionRow = RowOf<typeof EmbedSessionColumns.fields>

const byHash = `SELECT ${EmbedSessionColumns.columns} FROM embed_sessions WHERE token_hash = ?`

/** The rows of `embed_sessions`. */
export class EmbedSessionRepo extends Effect.Service<EmbedSessionRepo>()("Embeds/EmbedSessionRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const reader = yield* Reader

    /** The session whose token has this hash (on the path of every embed load: the reader's connection). */
    const findByTokenHash = (tokenHash: string): Effect.Effect<Option.Option<EmbedSessionRow>> =>
      reader.values(byHash, [tokenHash]).pipe(
        Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), EmbedSessionColumns.read)),
        Effect.orDie
      )

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
