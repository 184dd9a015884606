import { SqlClient, type Statement } from "@effect/sql"
import { Effect, Option } from "effect"
import { Instance } from "../Background/JobLeases.js"
import { type WebhookId, webhookId as asWebhookId } from "../Domain/Ids.js"
import type { PreviousSecret } from "../Domain/Webhook.js"
import { SqlDialect, upToSeq } from "../Sql/Dialect.js"
import type { ValueRows } from "../Sql/Reader.js"
import { column, rowShape, type RowOf } from "../Sql/Rows.js"
import type { NewAttempt } from "./WebhookRepo.js"
import { decodePreviousSecrets } from "./WebhookRows.js"

/** A claimed delivery as read: the webhook's columns are null once it was removed. */
const ClaimedColumns = rowShape({
  id: column.num("d.id"),
  eventId: column.text("d.event_id"),
  eventType: column.text("e.type AS event_type"),
  workspaceId: column.text("e.workspace_id"),
  surveyId: column.nullableText("e.survey_id"),
  payload: column.text("e.payload"),
  attempts: column.num("d.attempts"),
  webhookId: column.map(column.text("d.webhook_id"), asWebhookId),
  webhookSurveyId: column.nullableText("w.survey_id AS webhook_survey_id"),
  targetUrl: column.nullableText("w.target_url"),
  secret: column.nullableText("w.secret"),
  previousSecrets: column.map(
    column.nullableText("w.previous_secrets"),
    (stored) => stored === null ? null : decodePreviousSecrets(stored)
  )
})

/** Where a claimed delivery goes: its webhook's endpoint and the log its attempts are listed in. */
export interface DeliveryTarget {
  readonly url: string
  readonly secret: string
  /** Secrets replaced by a rotation, newest first; those still honoured sign the attempt too. */
  readonly previousSecrets: ReadonlyArray<PreviousSecret>
  readonly scope: "survey" | "workspace"
}

/** A claimed delivery with what its attempt needs. */
export interface ClaimedDelivery {
  readonly id: number
  readonly eventId: string
  readonly eventType: string
  readonly workspaceId: string
  readonly surveyId: string | null
  readonly payload: string
  /** Attempts made before this one. */
  readonly attempts: number
  readonly webhookId: WebhookId
  /** None once the webhook was removed: nothing is sent. */
  readonly target: Option.Option<DeliveryTarget>
}

const toClaimed = (
  { previousSecrets, secret, targetUrl, webhookSurveyId, ...delivery }: RowOf<typeof ClaimedColumns.fields>
): ClaimedDelivery => ({
  ...delivery,
  target: targetUrl === null || secret === null
    ? Option.none()
    : Option.some({
      url: targetUrl,
      secret,
      previousSecrets: previousSecrets ?? [],
      scope: webhookSurveyId === null ? "workspace" : "survey"
    })
})

const SettledColumns = rowShape({ state: column.text("state") })

/** The outcome of one attempt, ready to be written. */
export interface Settled {
  readonly deliveryId: number
  readonly webhookId: WebhookId
  readonly attempt: NewAttempt
  readonly next: { readonly state: "pending" | "delivered" | "given_up"; readonly nextAttemptAt: number }
}

// The outlook's and the cursor's columns take parameters: their statements write the `SELECT`
// list out, in the order declared here.
const OutlookColumns = rowShape({
  eventsWaiting: column.num("events_waiting"),
  due: column.nullableNum("due"),
  upcoming: column.nullableNum("upcoming"),
  leased: column.nullableNum("leased")
})
/** The fan-out cursor and the highest event number of its next batch, none when no event is new. */
const CursorColumns = rowShape({ lastSeq: column.num("c.last_seq"), maxSeq: column.nullableNum("max_seq") })
const DueColumns = rowShape({
  id: column.num("d.id"),
  webhookId: column.map(column.text("d.webhook_id"), asWebhookId),
  perSecond: column.nullableNum("w.max_attempts_per_second AS per_second")
})
const SlotColumns = rowShape({
  id: column.map(column.text("w.id"), asWebhookId),
  nextSlotAt: column.num("w.next_slot_at")
})
const LeasedColumns = rowShape({ id: column.num("id") })
const DepthColumns = rowShape({
  // The events past the cursor as a range closed by the newest: an open range ("seq > cursor")
  // is priced as a third of the table by a planner without statistics, and read whole.
  depth: column.num(`(SELECT count(*) FROM events
                    WHERE seq > (SELECT last_seq FROM outbox_cursors WHERE name = 'webhooks')
                      AND seq <= (SELECT MAX(seq) FROM events))
                 + (SELECT count(*) FROM deliveries WHERE state = 'pending') AS depth`),
  oldestDueAt: column.nullableNum("(SELECT MIN(next_attempt_at) FROM deliveries WHERE state = 'pending') AS oldest_due_at")
})

/** The row of a statement that answers exactly one; none fails, a defect once the caller dies on it. */
const single = (rows: ValueRows) => Option.fromNullable(rows[0])

/**
 * The statements of the outbox's fan-out and of deliveries: claiming, settling, releasing and
 * renewing their leases. The fan-out, the claim and the settling run inside the caller's
 * transaction (src/Webhooks/Deliveries.ts), a failure of the database left to it; the other
 * statements run on their own, a failure of the database a defect. A row of the wrong shape is a
 * defect everywhere.
 */
export class DeliveryRepo extends Effect.Service<DeliveryRepo>()("Webhooks/DeliveryRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const dialect = yield* SqlDialect
    // Leases carry this process's name: it renews and releases only its own.
    const owner = (yield* Instance).id

    const readCursor = (batch: number, upTo: number | undefined) =>
      sql`SELECT c.last_seq,
                 (SELECT MAX(seq) FROM (SELECT seq FROM events WHERE seq > c.last_seq${upToSeq(sql, upTo)}
                   ORDER BY seq LIMIT ${batch}) AS upcoming)
                   AS max_seq
          FROM outbox_cursors c WHERE c.name = 'webhooks'${dialect.lockRows("c")}`.values

    /**
     * How far the outbox is settled: on PostgreSQL events of transactions still open may hold
     * numbers below those already visible, and the fan-out never moves its cursor past this
     * (`settledSeq`, a short transaction of its own, never inside the caller's). None on SQLite.
     */
    const settledEvents = dialect.settledSeq("events").pipe(Effect.orDie)

    /**
     * The fan-out cursor and the highest event number of its next `batch`, up to `upTo`; none when
     * no event is new. One process at a time moves the cursor: on PostgreSQL its row stays locked
     * until the caller's transaction ends (on SQLite the transaction holds the write lock from its
     * start).
     */
    const cursor = (batch: number, upTo: number | undefined) =>
      readCursor(batch, upTo).pipe(
        Effect.map((rows) => {
          const row = rows[0] === undefined ? undefined : CursorColumns.read(rows[0])
          return row === undefined || row.maxSeq === null ? Option.none() : Option.some({ from: row.lastSeq, to: row.maxSeq })
        })
      )

    /**
     * One delivery per event numbered in (from, to] and matching webhook: same workspace, the
     * survey's webhook or the workspace's, registered before the event, enabled, and with the
     * event type among its types.
     */
    const fanOutRange = (range: { readonly from: number; readonly to: number }, now: number) =>
      sql`INSERT INTO deliveries (event_seq, event_id, webhook_id, state, attempts, next_attempt_at, lease_until, created_at)
        SELECT e.seq, e.id, w.id, 'pending', 0, ${now}, 0, ${now}
        FROM events e
        JOIN webhooks w ON w.workspace_id = e.workspace_id
          AND (w.survey_id IS NULL OR w.survey_id = e.survey_id)
          AND w.since_seq < e.seq
          AND w.disabled_reason IS NULL
        JOIN webhook_event_types f ON f.webhook_id = w.id AND f.event_type = e.type
        WHERE e.seq > ${range.from} AND e.seq <= ${range.to}
        ORDER BY e.seq
        ON CONFLICT DO NOTHING`.pipe(Effect.asVoid)

    const moveCursor = (to: number) => sql`UPDATE outbox_cursors SET last_seq = ${to} WHERE name = 'webhooks'`.pipe(Effect.asVoid)

    const claimedById = (ids: ReadonlyArray<number>) =>
      sql`SELECT ${sql.literal(ClaimedColumns.columns)}
          FROM deliveries d
          JOIN events e ON e.seq = d.event_seq
          LEFT JOIN webhooks w ON w.id = d.webhook_id
          WHERE d.id IN ${sql.in(ids)}
          ORDER BY d.next_attempt_at, d.id`.values

    // Each enabled webhook's first due deliveries, read from the index by webhook: a round costs
    // what is due, never the whole table with its 30 days of history. PostgreSQL runs the
    // per-webhook read as a lateral join (as a subquery in the join condition it is planned once
    // per row of deliveries when the table's statistics are old); SQLite has no lateral join, and
    // runs the subquery once per webhook.
    const dueJoin = dialect.choose({
      pg: () => (due: Statement.Fragment) =>
        sql`SELECT ${sql.literal(DueColumns.columns)} FROM webhooks w
            CROSS JOIN LATERAL (SELECT id, webhook_id, next_attempt_at ${due}) d
            WHERE w.disabled_reason IS NULL
            ORDER BY d.next_attempt_at, d.id`,
      sqlite: () => (due: Statement.Fragment) =>
        sql`SELECT ${sql.literal(DueColumns.columns)} FROM webhooks w
            JOIN deliveries d ON d.id IN (SELECT id ${due})
            WHERE w.disabled_reason IS NULL
            ORDER BY d.next_attempt_at, d.id`
    })

    /** Each enabled webhook's first `perWebhook` deliveries due at `now` and not leased, oldest first. */
    const due = (now: number, perWebhook: number) =>
      dueJoin(sql`FROM deliveries
          WHERE webhook_id = w.id AND state = 'pending' AND next_attempt_at <= ${now} AND lease_until <= ${now}
          ORDER BY next_attempt_at, id LIMIT ${perWebhook}`).values.pipe(Effect.map((rows) => rows.map(DueColumns.read)))

    /**
     * The next free slots of rated webhooks (src/Webhooks/Rate.ts); their rows stay locked until
     * the caller's transaction ends: of several processes claiming at once, each takes its slots
     * after the other's.
     */
    const slots = (ids: ReadonlyArray<WebhookId>) =>
      sql`SELECT ${sql.literal(SlotColumns.columns)} FROM webhooks w
          WHERE w.id IN ${sql.in(ids)} ORDER BY w.id${dialect.lockRows("w")}`.values.pipe(
        Effect.map((rows) => rows.map(SlotColumns.read))
      )

    /**
     * Leases those of the deliveries not leased meanwhile to this process until `until`; answers
     * their ids. A conditional update: of several processes claiming at once, each delivery goes
     * to one (the others' updates find its lease taken and skip it).
     */
    const lease = (ids: ReadonlyArray<number>, now: number, until: number) =>
      sql`UPDATE deliveries SET lease_until = ${until}, lease_owner = ${owner}
          WHERE id IN ${sql.in(ids)} AND state = 'pending' AND lease_until <= ${now}
          RETURNING ${sql.literal(LeasedColumns.columns)}`.values.pipe(Effect.map((rows) => rows.map(LeasedColumns.at.id)))

    /** The leased deliveries with what their attempts need, in due order. */
    const claimed = (ids: ReadonlyArray<number>) =>
      claimedById(ids).pipe(Effect.map((rows) => rows.map((row) => toClaimed(ClaimedColumns.read(row)))))

    /**
     * Moves a delivery this process leased on after an attempt, its lease released; a pending one
     * whose webhook was switched off meanwhile is given up instead. Answers its state as written.
     */
    const settleDelivery = (deliveryId: number, next: Settled["next"]) =>
      sql`UPDATE deliveries SET attempts = attempts + 1,
            state = CASE WHEN ${next.state} = 'pending' AND EXISTS (
              SELECT 1 FROM webhooks w WHERE w.id = deliveries.webhook_id AND w.disabled_reason IS NOT NULL
            ) THEN 'given_up' ELSE ${next.state} END,
            next_attempt_at = ${next.nextAttemptAt}, lease_until = 0, lease_owner = NULL
          WHERE id = ${deliveryId} AND lease_owner = ${owner}
          RETURNING ${sql.literal(SettledColumns.columns)}`.values.pipe(
        Effect.map((rows) => rows[0] === undefined ? undefined : SettledColumns.at.state(rows[0]))
      )

    /** Ends a delivery whose webhook was removed; nothing is sent. */
    const drop = (deliveryId: number) =>
      sql`UPDATE deliveries SET state = 'given_up', lease_until = 0 WHERE id = ${deliveryId}`.pipe(Effect.orDie)

    /** Returns this process's leased deliveries to the queue untouched, so another round (or process) attempts them. */
    const release = (ids: ReadonlyArray<number>) =>
      ids.length === 0
        ? Effect.void
        : sql`UPDATE deliveries SET lease_until = 0, lease_owner = NULL
              WHERE id IN ${sql.in(ids)} AND lease_owner = ${owner}`.pipe(Effect.orDie)

    /**
     * Extends this process's leases of deliveries still in flight to `until`. A lease another
     * process took over after it ran out stays theirs. A crashed process renews nothing, so its
     * deliveries become claimable when their leases run out.
     */
    const renew = (ids: ReadonlyArray<number>, until: number) =>
      ids.length === 0
        ? Effect.void
        : sql`UPDATE deliveries SET lease_until = ${until}
              WHERE id IN ${sql.in(ids)} AND lease_owner = ${owner} AND state = 'pending' AND lease_until > 0`.pipe(
          Effect.asVoid,
          Effect.orDie,
          Effect.withSpan("DeliveryRepo.renew")
        )

    const outlookQuery = (now: number) =>
      sql`SELECT
            CASE WHEN (SELECT MAX(seq) FROM events) > (SELECT last_seq FROM outbox_cursors WHERE name = 'webhooks')
              THEN 1 ELSE 0 END AS events_waiting,
            (SELECT MIN(next_attempt_at) FROM deliveries WHERE state = 'pending' AND lease_until <= ${now}) AS due,
            (SELECT MIN(next_attempt_at) FROM deliveries WHERE state = 'pending' AND next_attempt_at > ${now}) AS upcoming,
            (SELECT MIN(lease_until) FROM deliveries WHERE state = 'pending' AND lease_until > ${now}) AS leased`.values.pipe(
        Effect.flatMap(single),
        Effect.map(OutlookColumns.read)
      )

    /**
     * What a round would find, in one statement outside any transaction: whether the outbox holds
     * events past the fan-out cursor (`eventsWaiting`), whether a delivery is due at `now`
     * (`dueNow`; its webhook may still hold it back, or be disabled), and when something may next
     * become claimable after `now` (`wakeAt`: the earliest delivery coming due or lease expiring; a
     * delivery due already does not hide those coming after it). An idle worker's round is
     * this statement alone, not the fan-out's and the claim's transactions. An event whose
     * transaction is still open is not seen; a later look sees it.
     */
    const outlook = (now: number) =>
      outlookQuery(now).pipe(
        Effect.map(({ due, eventsWaiting, leased, upcoming }) => ({
          eventsWaiting: eventsWaiting === 1,
          dueNow: due !== null && due <= now,
          wakeAt: upcoming === null ? leased : leased === null ? upcoming : Math.min(upcoming, leased)
        })),
        Effect.orDie
      )

    /**
     * Events not yet fanned out plus deliveries still pending (the work the worker has before it),
     * and when the earliest pending delivery fell due (epoch ms; null when none is pending).
     */
    const depth = sql`SELECT ${sql.literal(DepthColumns.columns)}`.values.pipe(
      Effect.flatMap(single),
      Effect.map(DepthColumns.read),
      Effect.orDie
    )

    return {
      settledEvents,
      cursor,
      fanOutRange,
      moveCursor,
      due,
      slots,
      lease,
      claimed,
      settleDelivery,
      drop,
      release,
      renew,
      outlook,
      depth
    } as const
  })
}) {}
