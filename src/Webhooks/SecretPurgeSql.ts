import { type SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import { PreviousSecrets } from "../Domain/Webhook.js"

const StoredPrevious = Schema.Struct({ id: Schema.String, previousSecrets: Schema.String })
const decodePrevious = Schema.decodeUnknownSync(Schema.parseJson(PreviousSecrets))

/**
 * Deletes the replaced signing secrets (v1-extensions §X5.2) no longer honoured at `now`: a
 * secret is kept no longer than its overlap, not until the webhook's next rotation. Each
 * webhook's list is rewritten only if it is still the one read, so a rotation meanwhile wins.
 * Answers how many secrets went. Statements of their own, beside the other purges of the sweep.
 */
export const expiredSecretsPurge = (sql: SqlClient.SqlClient) => {
  const withPrevious = SqlSchema.findAll({
    Request: Schema.Void,
    Result: StoredPrevious,
    execute: () => sql`SELECT id, previous_secrets FROM webhooks WHERE previous_secrets <> '[]'`
  })
  return Effect.fn("WebhookRepo.purgeExpiredSecrets")(function*(now: number) {
    let purged = 0
    for (const row of yield* withPrevious(undefined)) {
      const previous = decodePrevious(row.previousSecrets)
      const kept = previous.filter((replaced) => replaced.expiresAt > now)
      if (kept.length === previous.length) continue
      const changed = yield* sql`UPDATE webhooks SET previous_secrets = ${JSON.stringify(kept)}
        WHERE id = ${row.id} AND previous_secrets = ${row.previousSecrets} RETURNING 1 AS n`
      if (changed.length > 0) purged += previous.length - kept.length
    }
    return purged
  }, Effect.orDie)
}
