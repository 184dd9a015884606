import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import type { SurveyId, WebhookId, WorkspaceId } from "../Domain/Ids.js"

/** A webhook's scope: workspace-wide when `surveyId` is null. */
export interface WebhookScope {
  readonly workspaceId: WorkspaceId
  readonly surveyId: SurveyId | null
}

/** An event that can be queued again: its number and its id. */
const StoredEvent = Schema.Struct({ seq: Schema.Number, id: Schema.String })
export type StoredEvent = typeof StoredEvent.Type

/** An event's place in the created-at order the recovery pages walk. */
const EventKey = Schema.Struct({ seq: Schema.Number, createdAt: Schema.String })
export type EventKey = typeof EventKey.Type

const EventSeq = Schema.Struct({ seq: Schema.Number })
const QueuedRow = Schema.Struct({ id: Schema.Number })

/**
 * The events kept for redelivery and the deliveries queued again from them. A delivery is one row
 * per event and webhook; queuing again restarts that row from its first attempt unless it is still
 * pending or an attempt of it is in flight (its webhook was switched off meanwhile), in one
 * conditional upsert, so two concurrent calls never queue an event twice. SQL failures are
 * defects here, but for the deletion of events, which runs in the caller's transaction.
 */
export class RedeliveryRepo extends Effect.Service<RedeliveryRepo>()("Webhooks/RedeliveryRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** The event of the scope with that id, created at `after` or later; test events are never sent again. */
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

    const event = (scope: WebhookScope, eventId: string, after: string) =>
      findEvent({ eventId, ...scope, after }).pipe(Effect.orDie)

    const queueOne = SqlSchema.findAll({
      Request: Schema.Struct({ webhookId: Schema.String, seq: Schema.Number, eventId: Schema.String, now: Schema.Number }),
      Result: QueuedRow,
      execute: ({ eventId, now, seq, webhookId }) =>
        sql`
        INSERT INTO deliveries (event_seq, event_id, webhook_id, state, attempts, next_attempt_at, lease_until, created_at)
        VALUES (${seq}, ${eventId}, ${webhookId}, 'pending', 0, ${now}, 0, ${now})
        ON CONFLICT (event_seq, webhook_id) DO UPDATE SET
          state = 'pending', attempts = 0, next_attempt_at = excluded.next_attempt_at, lease_until = 0, lease_owner = NULL
        WHERE deliveries.state <> 'pending' AND deliveries.lease_until <= ${now}
        RETURNING id`
    })

    /** Queues one event for the webhook; answers false when a delivery of it was already pending. */
    const redeliver = (webhookId: WebhookId, event: StoredEvent, now: number) =>
      queueOne({ webhookId, seq: event.seq, eventId: event.id, now }).pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie
      )

    const eventPage = SqlSchema.findAll({
      Request: Schema.Struct({
        workspaceId: Schema.String,
        surveyId: Schema.NullOr(Schema.String),
        since: Schema.String,
        until: Schema.String,
        after: EventKey,
        limit: Schema.Number
      }),
      Result: EventKey,
      execute: ({ after, limit, since, surveyId, until, workspaceId }) =>
        sql`
          SELECT e.seq, e.created_at FROM events e
          WHERE ${surveyId === null ? sql`e.workspace_id = ${workspaceId}` : sql`e.survey_id = ${surveyId}`}
            AND e.created_at >= ${since} AND e.created_at < ${until}
            AND (e.created_at, e.seq) > (${after.createdAt}, ${after.seq})
          ORDER BY e.created_at, e.seq LIMIT ${limit}`
    })

    /** The scope's next `limit` events created in [since, until), past `after` in created-at order. */
    const eventsAfter = (input: {
      readonly scope: WebhookScope
      readonly since: string
      readonly until: string
      readonly after: EventKey
      readonly limit: number
    }) => eventPage({ ...input.scope, since: input.since, until: input.until, after: input.after, limit: input.limit })
      .pipe(Effect.orDie)

    const queuePage = SqlSchema.findAll({
      Request: Schema.Struct({
        webhookId: Schema.String,
        workspaceId: Schema.String,
        logScope: Schema.Literal("survey", "workspace"),
        seqs: Schema.Array(Schema.Number),
        now: Schema.Number
      }),
      Result: QueuedRow,
      execute: ({ logScope, now, seqs, webhookId, workspaceId }) =>
        sql`
          INSERT INTO deliveries (event_seq, event_id, webhook_id, state, attempts, next_attempt_at, lease_until, created_at)
          SELECT e.seq, e.id, ${webhookId}, 'pending', 0, ${now}, 0, ${now}
          FROM events e
          JOIN webhook_event_types f ON f.webhook_id = ${webhookId} AND f.event_type = e.type
          WHERE e.seq IN ${sql.in(seqs)} AND e.workspace_id = ${workspaceId}
            AND NOT EXISTS (
              SELECT 1 FROM delivery_attempts a WHERE a.event_id = e.id AND a.ok = 1 AND a.scope = ${logScope}
            )
          ORDER BY e.seq
          ON CONFLICT (event_seq, webhook_id) DO UPDATE SET
            state = 'pending', attempts = 0, next_attempt_at = excluded.next_attempt_at, lease_until = 0, lease_owner = NULL
          WHERE deliveries.state <> 'pending' AND deliveries.lease_until <= ${now}
          RETURNING id`
    })

    /**
     * Queues those of the events numbered `seqs` whose type the webhook receives and that have
     * neither a successful attempt in the scope's log nor a pending delivery; answers how many.
     */
    const recoverEvents = (input: {
      readonly webhookId: WebhookId
      readonly scope: WebhookScope
      readonly seqs: ReadonlyArray<number>
      readonly now: number
    }) =>
      queuePage({
        webhookId: input.webhookId,
        workspaceId: input.scope.workspaceId,
        logScope: input.scope.surveyId === null ? "workspace" : "survey",
        seqs: input.seqs,
        now: input.now
      }).pipe(Effect.map((rows) => rows.length), Effect.orDie)

    const expired = SqlSchema.findAll({
      Request: Schema.Struct({ cutoff: Schema.String, limit: Schema.Number }),
      Result: EventSeq,
      execute: ({ cutoff, limit }) =>
        sql`SELECT e.seq FROM events e
        WHERE e.created_at < ${cutoff}
          AND e.seq <= (SELECT last_seq FROM outbox_cursors WHERE name = 'webhooks')
          AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_seq = e.seq AND d.state = 'pending')
        ORDER BY e.created_at LIMIT ${limit}`
    })

    /** Up to `limit` events created before `cutoff`, fanned out and with no delivery pending. */
    const expiredEvents = (cutoff: string, limit: number) =>
      expired({ cutoff, limit }).pipe(Effect.map((rows) => rows.map((row) => row.seq)), Effect.orDie)

    /** Deletes events with their deliveries; inside the caller's transaction, which a failure of the database is left to. */
    const deleteEvents = (seqs: ReadonlyArray<number>) =>
      Effect.zipRight(
        sql`DELETE FROM deliveries WHERE event_seq IN ${sql.in(seqs)}`,
        sql`DELETE FROM events WHERE seq IN ${sql.in(seqs)}`
      ).pipe(Effect.asVoid)

    return { event, redeliver, eventsAfter, recoverEvents, expiredEvents, deleteEvents } as const
  })
}) {}
