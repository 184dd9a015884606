import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { column, rowShape } from "../Sql/Rows.js"
import { inBatches } from "../Sql/Transactions.js"

/** The stored first answer to a key, as read back for a repeat. */
const StoredAnswer = rowShape({
  requestHash: column.text("request_hash"),
  status: column.num("status"),
  body: column.text("body")
})

/** The rows of `idempotency_keys` (migration 0011): one per scope and key hash, with the first answer. */
export class IdempotencyStore extends Effect.Service<IdempotencyStore>()("Http/IdempotencyStore", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /**
     * Claims a key for `requestHash`: a new row, or the row of an answer created at or before
     * `expiredBefore`, emptied. False when a live answer holds the key.
     */
    const claim = (scope: string, key: string, requestHash: string, now: number, expiredBefore: number) =>
      sql`INSERT INTO idempotency_keys
          (scope, idempotency_key, request_hash, status, body, created_at)
        VALUES (${scope}, ${key}, ${requestHash}, 0, '', ${now})
        ON CONFLICT (scope, idempotency_key) DO UPDATE SET
          request_hash = excluded.request_hash, status = 0, body = '', created_at = excluded.created_at
          WHERE idempotency_keys.created_at <= ${expiredBefore}
        RETURNING scope`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)

    /** Stores the answer of a claimed key. */
    const storeAnswer = (scope: string, key: string, answer: { readonly status: number; readonly body: string }) =>
      sql`UPDATE idempotency_keys SET status = ${answer.status}, body = ${answer.body}
        WHERE scope = ${scope} AND idempotency_key = ${key}`.pipe(Effect.asVoid, Effect.orDie)

    /** The stored answer of a key, with the request it answered. */
    const storedAnswer = (scope: string, key: string) =>
      sql`SELECT ${sql.literal(StoredAnswer.columns)} FROM idempotency_keys
        WHERE scope = ${scope} AND idempotency_key = ${key}`.values.pipe(
        Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), StoredAnswer.read)),
        Effect.orDie
      )

    /** Deletes the answers created at or before `expiredBefore`, oldest first, WorkBatches' `purge` per statement; answers how many. */
    const prune = (expiredBefore: number) =>
      inBatches("idempotency key purge", (limit) =>
        // A range closed by the oldest answer, walked by the age index (WebhookRepo.purgeAttempts says why).
        sql`DELETE FROM idempotency_keys WHERE (scope, idempotency_key) IN (
            SELECT scope, idempotency_key FROM idempotency_keys
            WHERE created_at >= (SELECT MIN(created_at) FROM idempotency_keys) AND created_at <= ${expiredBefore}
            ORDER BY created_at LIMIT ${limit})
          RETURNING scope`.pipe(Effect.map((rows) => rows.length), Effect.orDie))

    return { claim, storeAnswer, storedAnswer, prune } as const
  })
}) {}
