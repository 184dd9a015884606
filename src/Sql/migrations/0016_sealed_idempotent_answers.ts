import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { createHash } from "node:crypto"

/**
 * Remembered idempotent answers are now kept under the hash of their key (SHA-256, base64url), and
 * an embed session's answer sealed under that key. The rows stored before held both in clear. The
 * workspace's rows (embed sessions, whose answer holds a live one-time URL) go: a retry of such a
 * request made before the upgrade creates a new session. The respondents' rows (a response id, no
 * secret) are kept under their key's hash, so a respondent retrying a save across the upgrade still
 * gets its first answer.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DELETE FROM idempotency_keys WHERE scope NOT LIKE 'respondent:%'`
  const rows = yield* sql`SELECT scope, idempotency_key AS k FROM idempotency_keys`.pipe(
    Effect.flatMap(Schema.decodeUnknown(Schema.Array(Schema.Struct({ scope: Schema.String, k: Schema.String }))))
  )
  for (const row of rows) {
    const hashed = createHash("sha256").update(row.k).digest("base64url")
    yield* sql`UPDATE idempotency_keys SET idempotency_key = ${hashed} WHERE scope = ${row.scope} AND idempotency_key = ${row.k}`
  }
})
