import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Remembered idempotent answers are now kept under the hash of their key, and an embed session's
 * answer sealed under that key. The rows stored before held both in clear (with a live one-time
 * URL), so they go: a retry of a request made before the upgrade runs again.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DELETE FROM idempotency_keys`
})
