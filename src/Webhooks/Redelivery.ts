import { SqlClient, SqlSchema } from "@effect/sql"
import { Duration, Effect, Schema } from "effect"
import type { SurveyId, WebhookId, WorkspaceId } from "../Domain/Ids.js"
import { toIso } from "../Domain/Time.js"
import { DeliverySettings } from "./DeliverySettings.js"

/** An event's place in the created-at order the redelivery pages walk. */
const EventKey = Schema.Struct({ seq: Schema.Number, createdAt: Schema.String })

/** How long events are kept, and so how far back they can be sent again (v1-extensions §X1.2). */
export const eventRetention = Duration.days(30)

/** A webhook's scope: workspace-wide when `surveyId` is null. */
export interface WebhookScope {
  readonly workspaceId: WorkspaceId
  readonly surveyId: SurveyId | null
}

const StoredEvent = Schema.Struct({ seq: Schema.Number, id: Schema.String })

/** Bounds the batched loops below: far more steps than 30 days of events can take. */
const maxSteps = 1_000_000

/**
 * Queuing events again for one webhook (v1-extensions §X1.2, §X1.3). A delivery is one row per
 * event and webhook; queuing again restarts that row from its first attempt unless it is still
 * pending or an attempt of it is in flight (its webhook was switched off meanwhile), in one
 * conditional upsert, so two concurrent calls never queue an event twice.
 * SQL failures are defects here.
 */
export class Redelivery extends Effect.Service<Redelivery>()("Webhooks/Redelivery", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const findEvent = SqlSchema.findOne({
      Request: Schema.Struct({
        eventId: Schema.String,
        workspaceId: Schema.String,
        surveyId: Schema.NullOr(Schema.String),
        after: Schema.String
      }),
      Result: StoredEvent,
      execute: ({ after, eventId, surveyId, workspaceId }) =>
        sql`SELECT seq, id FROM events
            WHERE id = ${eventId} AND workspace_id = ${workspaceId} AND created_at >= ${after}
              AND type <> 'webhook.test'
              ${surveyId === null ? sql`` : sql`AND survey_id = ${surveyId}`}`
    })

    /** The event of this scope with that id, when it is at most 30 days old at `now`. */
    const event = Effect.fn("Redelivery.event")(function*(scope: WebhookScope, eventId: string, now: number) {
      return yield* findEvent({ eventId, ...scope, after: toIso(now - Duration.toMillis(eventRetention)) }).pipe(
        Effect.orDie
      )
    })

    /** Queues one event for the webhook; answers false when a delivery of it was already pending. */
    const redeliver = Effect.fn("Redelivery.redeliver")(function*(input: {
      readonly webhookId: WebhookId
      readonly event: typeof StoredEvent.Type
      readonly now: number
    }) {
      const { event, now, webhookId } = input
      const rows = yield* sql`
        INSERT INTO deliveries (event_seq, event_id, webhook_id, state, attempts, next_attempt_at, lease_until, created_at)
        VALUES (${event.seq}, ${event.id}, ${webhookId}, 'pending', 0, ${now}, 0, ${now})
        ON CONFLICT (event_seq, webhook_id) DO UPDATE SET
          state = 'pending', attempts = 0, next_attempt_at = excluded.next_attempt_at, lease_until = 0, lease_owner = NULL
        WHERE deliveries.state <> 'pending' AND deliveries.lease_until <= ${now}
        RETURNING id`.pipe(Effect.orDie)
      return rows.length > 0
    })

    /**
     * Queues every event of the scope created in [since, until) whose type the webhook receives
     * and that has neither a successful attempt in the scope's log nor a pending delivery,
     * whenever it was created relative to the webhook. Answers how many were queued. Works
     * through the window `batch` events at a time, each step a statement of its own, so that a
     * month of events never holds the database's write lock for long.
     */
    const recover = Effect.fn("Redelivery.recover")(function*(input: {
      readonly webhookId: WebhookId
      readonly scope: WebhookScope
      readonly since: string
      readonly until: string
      readonly now: number
    }) {
      const { now, scope, since, until, webhookId } = input
      const { batch } = yield* DeliverySettings
      const logScope = scope.surveyId === null ? "workspace" : "survey"
      let after = { createdAt: "", seq: 0 }
      let queued = 0
      for (let step = 0; step < maxSteps; step++) {
        const page = yield* sql`
          SELECT e.seq, e.created_at FROM events e
          WHERE ${scope.surveyId === null ? sql`e.workspace_id = ${scope.workspaceId}` : sql`e.survey_id = ${scope.surveyId}`}
            AND e.created_at >= ${since} AND e.created_at < ${until}
            AND (e.created_at, e.seq) > (${after.createdAt}, ${after.seq})
          ORDER BY e.created_at, e.seq LIMIT ${batch}`.pipe(
          Effect.flatMap(Schema.decodeUnknown(Schema.Array(EventKey))),
          Effect.orDie
        )
        const last = page[page.length - 1]
        if (last === undefined) break
        after = last
        const rows = yield* sql`
          INSERT INTO deliveries (event_seq, event_id, webhook_id, state, attempts, next_attempt_at, lease_until, created_at)
          SELECT e.seq, e.id, ${webhookId}, 'pending', 0, ${now}, 0, ${now}
          FROM events e
          JOIN webhook_event_types f ON f.webhook_id = ${webhookId} AND f.event_type = e.type
          WHERE e.seq IN ${sql.in(page.map((row) => row.seq))} AND e.workspace_id = ${scope.workspaceId}
            AND NOT EXISTS (
              SELECT 1 FROM delivery_attempts a WHERE a.event_id = e.id AND a.ok = 1 AND a.scope = ${logScope}
            )
          ORDER BY e.seq
          ON CONFLICT (event_seq, webhook_id) DO UPDATE SET
            state = 'pending', attempts = 0, next_attempt_at = excluded.next_attempt_at, lease_until = 0, lease_owner = NULL
          WHERE deliveries.state <> 'pending' AND deliveries.lease_until <= ${now}
          RETURNING id`.pipe(Effect.orDie)
        queued += rows.length
      }
      return queued
    })

    const expiredEvents = (cutoff: string, batch: number) =>
      sql`SELECT e.seq FROM events e
        WHERE e.created_at < ${cutoff}
          AND e.seq <= (SELECT last_seq FROM outbox_cursors WHERE name = 'webhooks')
          AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_seq = e.seq AND d.state = 'pending')
        ORDER BY e.created_at LIMIT ${batch}`.pipe(
        Effect.flatMap(Schema.decodeUnknown(Schema.Array(Schema.Struct({ seq: Schema.Number }))))
      )

    const deleteEvents = (seqs: ReadonlyArray<number>) =>
      sql.withTransaction(Effect.gen(function*() {
        yield* sql`DELETE FROM deliveries WHERE event_seq IN ${sql.in(seqs)}`
        yield* sql`DELETE FROM events WHERE seq IN ${sql.in(seqs)}`
      }))

    /**
     * Deletes events older than `olderThan` with their finished deliveries, `batch` at a time: an
     * event not yet fanned out, or with a delivery still pending, stays until that is over.
     * Answers how many were deleted.
     */
    const purgeEvents = Effect.fn("Redelivery.purgeEvents")(function*(olderThan: number) {
      const { batch } = yield* DeliverySettings
      const cutoff = toIso(olderThan)
      let purged = 0
      for (let step = 0; step < maxSteps; step++) {
        const seqs = (yield* expiredEvents(cutoff, batch)).map((row) => row.seq)
        if (seqs.length === 0) break
        yield* deleteEvents(seqs)
        purged += seqs.length
      }
      return purged
    }, Effect.orDie)

    return { event, redeliver, recover, purgeEvents } as const
  })
}) {}

export type StoredEvent = typeof StoredEvent.Type
