import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { ddlOf } from "../Ddl.js"

/**
 * Secret rotation and a delivery rate per webhook (v1-extensions §X5.2, §X5.3): the replaced
 * secrets still honoured, as a JSON array newest first of `{"secret", "expiresAt"}` (epoch ms),
 * kept beside the current secret; the rate (NULL = no limit); and the webhook's next free slot
 * for an attempt (epoch ms, fractional: one slot every 1000 / rate ms).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const ddl = ddlOf(sql)
  yield* ddl`ALTER TABLE webhooks ADD COLUMN previous_secrets TEXT NOT NULL DEFAULT '[]'`
  yield* ddl`ALTER TABLE webhooks ADD COLUMN max_attempts_per_second INTEGER
    CHECK (max_attempts_per_second BETWEEN 1 AND 1000)`
  yield* ddl`ALTER TABLE webhooks ADD COLUMN next_slot_at REAL NOT NULL DEFAULT 0`
})
