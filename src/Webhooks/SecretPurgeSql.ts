import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { column, rowShape } from "../Sql/Rows.js"
import { decodePreviousSecrets } from "./WebhookRows.js"

const StoredPrevious = rowShape({ id: column.text("id"), previousSecrets: column.text("previous_secrets") })

/**
 * Deletes the replaced signing secrets (v1-extensions §X5.2) no longer honoured at `now`: a
 * secret is kept no longer than its overlap, not until the webhook's next rotation. Each
 * webhook's list is rewritten only if it is still the one read, so a rotation meanwhile wins.
 * Answers how many secrets went. Statements of their own, beside the other purges of the sweep.
 */
export const expiredSecretsPurge = (sql: SqlClient.SqlClient) =>
  Effect.fn("WebhookRepo.purgeExpiredSecrets")(function*(now: number) {
    let purged = 0
    const rows = yield* sql`SELECT ${sql.literal(StoredPrevious.columns)} FROM webhooks WHERE previous_secrets <> '[]'`.values
    for (const row of rows.map(StoredPrevious.read)) {
      const previous = decodePreviousSecrets(row.previousSecrets)
      const kept = previous.filter((replaced) => replaced.expiresAt > now)
      if (kept.length === previous.length) continue
      const changed = yield* sql`UPDATE webhooks SET previous_secrets = ${JSON.stringify(kept)}
        WHERE id = ${row.id} AND previous_secrets = ${row.previousSecrets} RETURNING 1 AS n`
      if (changed.length > 0) purged += previous.length - kept.length
    }
    return purged
  }, Effect.orDie)
