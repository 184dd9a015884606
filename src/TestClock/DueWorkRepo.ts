import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"

const decodeDue = Schema.decodeUnknown(Schema.Tuple(Schema.Struct({ due: Schema.NullOr(Schema.Number) })))

/**
 * When the next delivery attempt to an enabled webhook falls due after a time (Clock millis), for
 * the simulated clock's advance (v1-extensions §X5.1); null when none is coming. A disabled
 * webhook's pending deliveries are never attempted: they are not work to come.
 */
export const nextAttemptAfterOf = Effect.map(SqlClient.SqlClient, (sql) => (after: number) =>
  sql`SELECT MIN(d.next_attempt_at) AS due FROM deliveries d
      JOIN webhooks w ON w.id = d.webhook_id
      WHERE d.state = 'pending' AND w.disabled_reason IS NULL AND d.next_attempt_at > ${after}`.pipe(
    Effect.flatMap(decodeDue),
    Effect.map(([row]) => row.due),
    Effect.orDie,
    Effect.withSpan("DueWorkRepo.nextAttemptAfter")
  ))
