import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import type { SurveyId, WebhookId, WorkspaceId } from "../Domain/Ids.js"
import { Reader } from "../Sql/Reader.js"
import { column, rowShape, type RowOf } from "../Sql/Rows.js"

/** A webhook's scope: workspace-wide when `surveyId` is null. */
export interface WebhookScope {
  readonly workspaceId: WorkspaceId
  readonly surveyId: SurveyId | null
}

/** An event that can be queued again: its number and its id. */
const StoredEventColumns = rowShape({ seq: column.num("seq"), id: column.text("id") })
export type StoredEvent = RowOf<typeof StoredEventColumns.fields>

/** An event's place in the created-at order the recovery pages walk. */
const EventKeyColumns = rowShape({ seq: column.num("e.seq"), createdAt: column.text("e.created_at") })
export type EventKey = RowOf<typeof EventKeyColumns.fields>

const EventSeqColumns = rowShape({ seq: column.num("e.seq") })

const eventOf = (scope: "workspace" | "survey") =>
  `SELECT ${StoredEventColumns.columns} FROM events
  WHERE id = ? AND workspace_id = ? AND created_at >= ?
    AND type <> 'webhook.test'${scope === "survey" ? " AND survey_id = ?" : ""}`
const workspaceEvent = eventOf("workspace")
const surveyEvent = eventOf("survey")

const eventPageOf = (scope: "workspace" | "survey") =>
  `SELECT ${EventKeyColumns.columns} FROM events e
  WHERE ${scope === "workspace" ? "e.workspace_id" : "e.survey_id"} = ?
    AND e.created_at >= ? AND e.created_at < ?
    AND (e.created_at, e.seq) > (?, ?)
  ORDER BY e.created_at, e.seq LIMIT ?`
const workspaceEventPage = eventPageOf("workspace")
const surveyEventPage = eventPageOf("survey")

/**
 * The events kept for redelivery and the deliveries queued again from them. A delivery is one row
 * per event and webhook; queuing again restarts that row from its first attempt unless it is still
 * pending or an attempt of it is in flight (its webhook was switched off meanwhile), in one
 * conditional upsert, so two concurrent calls never queue an event twice. The requests' reads of
 * events run on the `Reader`. SQL failures are defects here, but for the deletion of events, which
 * runs in the caller's transaction.
 */
export class RedeliveryRepo extends Effect.Service<RedeliveryRepo>()("Webhooks/RedeliveryRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const reader = yield* Reader

    /** The event of the scope with that id, created at `after` or later; test events are never sent again. */
    const event = (scope: WebhookScope, eventId: string, after: string) =>
      (scope.surveyId === null
        ? reader.values(workspaceEvent, [eventId, scope.workspaceId, after])
        : reader.values(surveyEvent, [eventId, scope.workspaceId, after, scope.surveyId])).pipe(
          Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), StoredEventColumns.read)),
          Effect.orDie
        )

    /** Queues one event for the webhook; answers false when a delivery of it was already pending. */
    const redeliver = (webhookId: WebhookId, event: StoredEvent, now: number) =>
      sql`
        INSERT INTO deliveries (event_seq, event_id, webhook_id, state, attempts, next_attempt_at, lease_until, created_at)
        VALUES (${event.seq}, ${event.id}, ${webhookId}, 'pending', 0, ${now}, 0, ${now})
        ON CONFLICT (event_seq, webhook_id) DO UPDATE SET
          state = 'pending', attempts = 0, next_attempt_at = excluded.next_attempt_at, lease_until = 0, lease_owner = NULL
        WHERE deliveries.state <> 'pending' AND deliveries.lease_until <= ${now}
        RETURNING id`.values.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie
      )

    /** The scope's next `limit` events created in [since, until), past `after` in created-at order. */
    const eventsAfter = (input: {
      readonly scope: WebhookScope
      readonly since: string
      readonly until: string
      readonly after: EventKey
      readonly limit: number
    }) => {
      const { after, limit, scope, since, until } = input
      const window = [since, until, after.createdAt, after.seq, limit]
      return (scope.surveyId === null
        ? reader.values(workspaceEventPage, [scope.workspaceId, ...window])
        : reader.values(surveyEventPage, [scope.surveyId, ...window])).pipe(
          Effect.map((rows) => rows.map(EventKeyColumns.read)),
          Effect.orDie
        )
    }

    /**
     * Queues those of the events numbered `seqs` whose type the webhook receives and that have
     * neither a successful attempt in the scope's log nor a pending delivery; answers how many.
     */
    const recoverEvents = (input: {
      readonly webhookId: WebhookId
      readonly scope: WebhookScope
      readonly seqs: ReadonlyArray<number>
      readonly now: number
    }) => {
      const { now, scope, seqs, webhookId } = input
      const logScope = scope.surveyId === null ? "workspace" : "survey"
      return sql`
          INSERT INTO deliveries (event_seq, event_id, webhook_id, state, attempts, next_attempt_at, lease_until, created_at)
          SELECT e.seq, e.id, ${webhookId}, 'pending', 0, ${now}, 0, ${now}
          FROM events e
          JOIN webhook_event_types f ON f.webhook_id = ${webhookId} AND f.event_type = e.type
          WHERE e.seq IN ${sql.in(seqs)} AND e.workspace_id = ${scope.workspaceId}
            AND NOT EXISTS (
              SELECT 1 FROM delivery_attempts a WHERE a.event_id = e.id AND a.ok = 1 AND a.scope = ${logScope}
            )
          ORDER BY e.seq
          ON CONFLICT (event_seq, webhook_id) DO UPDATE SET
            state = 'pending', attempts = 0, next_attempt_at = excluded.next_attempt_at, lease_until = 0, lease_owner = NULL
          WHERE deliveries.state <> 'pending' AND deliveries.lease_until <= ${now}
          RETURNING id`.values.pipe(Effect.map((rows) => rows.length), Effect.orDie)
    }

    /** Up to `limit` events created before `cutoff`, fanned out and with no delivery pending. */
    const expiredEvents = (cutoff: string, limit: number) =>
      sql`SELECT ${sql.literal(EventSeqColumns.columns)} FROM events e
        WHERE e.created_at < ${cutoff}
          AND e.seq <= (SELECT last_seq FROM outbox_cursors WHERE name = 'webhooks')
          AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_seq = e.seq AND d.state = 'pending')
        ORDER BY e.created_at LIMIT ${limit}`.values.pipe(Effect.map((rows) => rows.map(EventSeqColumns.at.seq)), Effect.orDie)

    /** Deletes events with their deliveries; inside the caller's transaction, which a failure of the database is left to. */
    const deleteEvents = (seqs: ReadonlyArray<number>) =>
      Effect.zipRight(
        sql`DELETE FROM deliveries WHERE event_seq IN ${sql.in(seqs)}`,
        sql`DELETE FROM events WHERE seq IN ${sql.in(seqs)}`
      ).pipe(Effect.asVoid)

    return { event, redeliver, eventsAfter, recoverEvents, expiredEvents, deleteEvents } as const
  })
}) {}
