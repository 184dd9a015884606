import { SqlClient, SqlSchema, type Statement } from "@effect/sql"
import { Clock, Effect, Metric, Option, Schema } from "effect"
import { Instance } from "../Background/JobLeases.js"
import { WebhookId } from "../Domain/Ids.js"
import { type PreviousSecret, PreviousSecrets } from "../Domain/Webhook.js"
import { SqlDialect, upToSeq } from "../Sql/Dialect.js"
import { webhookDeliveries } from "../Telemetry/Metrics.js"
import { attemptsAllowed, firstFree, intervalMillis, madeFrom } from "./Rate.js"
import { WebhookRepo, type NewAttempt } from "./WebhookRepo.js"

/** A claimed delivery as read: the webhook's columns are null once it was removed. */
const ClaimedRow = Schema.Struct({
  id: Schema.Number,
  eventId: Schema.String,
  eventType: Schema.String,
  workspaceId: Schema.String,
  surveyId: Schema.NullOr(Schema.String),
  payload: Schema.String,
  attempts: Schema.Number,
  webhookId: WebhookId,
  webhookSurveyId: Schema.NullOr(Schema.String),
  targetUrl: Schema.NullOr(Schema.String),
  secret: Schema.NullOr(Schema.String),
  previousSecrets: Schema.NullOr(Schema.parseJson(PreviousSecrets))
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
  { previousSecrets, secret, targetUrl, webhookSurveyId, ...delivery }: typeof ClaimedRow.Type
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

/** What a claim leased, and when a webhook held back by its rate may next be attempted (none when none was). */
export interface Claim {
  readonly rows: ReadonlyArray<ClaimedDelivery>
  readonly heldUntil: number | null
}

const SettledRows = Schema.Array(Schema.Struct({ state: Schema.String }))

/** What became of an attempt, as `webhook_deliveries_total` counts it. */
type DeliveryOutcome = "delivered" | "retrying" | "given_up" | "disabled"

const byOutcome: Record<DeliveryOutcome, Metric.Metric.Counter<number>> = {
  delivered: Metric.tagged(webhookDeliveries, "outcome", "delivered"),
  retrying: Metric.tagged(webhookDeliveries, "outcome", "retrying"),
  given_up: Metric.tagged(webhookDeliveries, "outcome", "given_up"),
  disabled: Metric.tagged(webhookDeliveries, "outcome", "disabled")
}

const countDelivery = (outcome: DeliveryOutcome) => Metric.increment(byOutcome[outcome])

/** The outcome of one attempt, ready to be written. */
export interface Settled {
  readonly deliveryId: number
  readonly webhookId: WebhookId
  readonly attempt: NewAttempt
  readonly next: { readonly state: "pending" | "delivered" | "given_up"; readonly nextAttemptAt: number }
}

const Outlook = Schema.Struct({
  eventsWaiting: Schema.Number,
  due: Schema.NullOr(Schema.Number),
  upcoming: Schema.NullOr(Schema.Number),
  leased: Schema.NullOr(Schema.Number)
})
/** The fan-out cursor and the highest event number of its next batch, none when no event is new. */
const Cursor = Schema.Struct({ lastSeq: Schema.Number, maxSeq: Schema.NullOr(Schema.Number) })
const DueRow = Schema.Struct({ id: Schema.Number, webhookId: WebhookId, perSecond: Schema.NullOr(Schema.Number) })
const SlotRow = Schema.Struct({ id: WebhookId, nextSlotAt: Schema.Number })
const IdRow = Schema.Struct({ id: Schema.Number })
const Depth = Schema.Struct({ depth: Schema.Number, oldestDueAt: Schema.NullOr(Schema.Number) })

/** Fan-out from the outbox, claiming and settling deliveries. SQL failures are defects here. */
export class DeliveryRepo extends Effect.Service<DeliveryRepo>()("Webhooks/DeliveryRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const dialect = yield* SqlDialect
    const webhooks = yield* WebhookRepo
    // Leases carry this process's name: it renews and releases only its own.
    const owner = (yield* Instance).id

    const readCursor = SqlSchema.findAll({
      Request: Schema.Struct({ batch: Schema.Number, upTo: Schema.UndefinedOr(Schema.Number) }),
      Result: Cursor,
      execute: ({ batch, upTo }) =>
        sql`SELECT c.last_seq,
                   (SELECT MAX(seq) FROM (SELECT seq FROM events WHERE seq > c.last_seq${upToSeq(sql, upTo)}
                     ORDER BY seq LIMIT ${batch}) AS upcoming)
                     AS max_seq
            FROM outbox_cursors c WHERE c.name = 'webhooks'${dialect.lockRows("c")}`
    })

    /**
     * Creates one delivery per new event and matching webhook, and moves the cursor past those
     * events, in one transaction: each event fans out once, and a crash repeats nothing. On
     * PostgreSQL events of transactions still open may hold numbers below those already visible:
     * the fan-out first reads how far the outbox is settled (`settledSeq`, in a short transaction
     * of its own) and never moves the cursor past it.
     */
    const fanOut = Effect.fn("DeliveryRepo.fanOut")(
      function*(now: number, batch: number) {
        const upTo = yield* dialect.settledSeq("events")
        return yield* sql.withTransaction(Effect.gen(function*() {
          // One process at a time moves the cursor: on PostgreSQL its row stays locked until commit (on
          // SQLite the transaction holds the write lock from its start).
          const row = (yield* readCursor({ batch, upTo }))[0]
          if (row === undefined || row.maxSeq === null) return 0
          yield* sql`INSERT INTO deliveries (event_seq, event_id, webhook_id, state, attempts, next_attempt_at, lease_until, created_at)
            SELECT e.seq, e.id, w.id, 'pending', 0, ${now}, 0, ${now}
            FROM events e
            JOIN webhooks w ON w.workspace_id = e.workspace_id
              AND (w.survey_id IS NULL OR w.survey_id = e.survey_id)
              AND w.since_seq < e.seq
              AND w.disabled_reason IS NULL
            JOIN webhook_event_types f ON f.webhook_id = w.id AND f.event_type = e.type
            WHERE e.seq > ${row.lastSeq} AND e.seq <= ${row.maxSeq}
            ORDER BY e.seq
            ON CONFLICT DO NOTHING`
          yield* sql`UPDATE outbox_cursors SET last_seq = ${row.maxSeq} WHERE name = 'webhooks'`
          return row.maxSeq - row.lastSeq
        }))
      },
      Effect.orDie
    )

    const claimedById = SqlSchema.findAll({
      Request: Schema.Array(Schema.Number),
      Result: ClaimedRow,
      execute: (ids) =>
        sql`SELECT d.id, d.event_id, e.type AS event_type, e.workspace_id, e.survey_id, e.payload, d.attempts,
                   d.webhook_id, w.survey_id AS webhook_survey_id, w.target_url, w.secret, w.previous_secrets
            FROM deliveries d
            JOIN events e ON e.seq = d.event_seq
            LEFT JOIN webhooks w ON w.id = d.webhook_id
            WHERE d.id IN ${sql.in(ids)}
            ORDER BY d.next_attempt_at, d.id`
    })

    // Each enabled webhook's first due deliveries, read from the index by webhook: a round costs
    // what is due, never the whole table with its 30 days of history. PostgreSQL runs the
    // per-webhook read as a lateral join (as a subquery in the join condition it is planned once
    // per row of deliveries when the table's statistics are old); SQLite has no lateral join, and
    // runs the subquery once per webhook.
    const dueJoin = dialect.choose({
      pg: () => (due: Statement.Fragment) =>
        sql`SELECT d.id, d.webhook_id, w.max_attempts_per_second AS per_second FROM webhooks w
            CROSS JOIN LATERAL (SELECT id, webhook_id, next_attempt_at ${due}) d
            WHERE w.disabled_reason IS NULL
            ORDER BY d.next_attempt_at, d.id`,
      sqlite: () => (due: Statement.Fragment) =>
        sql`SELECT d.id, d.webhook_id, w.max_attempts_per_second AS per_second FROM webhooks w
            JOIN deliveries d ON d.id IN (SELECT id ${due})
            WHERE w.disabled_reason IS NULL
            ORDER BY d.next_attempt_at, d.id`
    })
    const dueRows = SqlSchema.findAll({
      Request: Schema.Struct({ now: Schema.Number, perWebhook: Schema.Number }),
      Result: DueRow,
      execute: ({ now, perWebhook }) =>
        dueJoin(sql`FROM deliveries
          WHERE webhook_id = w.id AND state = 'pending' AND next_attempt_at <= ${now} AND lease_until <= ${now}
          ORDER BY next_attempt_at, id LIMIT ${perWebhook}`)
    })

    // The rated webhooks' rows stay locked until the claim commits: of several processes claiming
    // at once, each takes its slots after the other's.
    const slotsOf = SqlSchema.findAll({
      Request: Schema.Array(WebhookId),
      Result: SlotRow,
      execute: (ids) =>
        sql`SELECT w.id, w.next_slot_at FROM webhooks w WHERE w.id IN ${sql.in(ids)} ORDER BY w.id${dialect.lockRows("w")}`
    })

    const lease = SqlSchema.findAll({
      Request: Schema.Struct({ ids: Schema.Array(Schema.Number), now: Schema.Number, until: Schema.Number }),
      Result: IdRow,
      execute: ({ ids, now, until }) =>
        sql`UPDATE deliveries SET lease_until = ${until}, lease_owner = ${owner}
            WHERE id IN ${sql.in(ids)} AND state = 'pending' AND lease_until <= ${now}
            RETURNING id`
    })

    /**
     * Leases up to `free` due deliveries, oldest first, taking from each webhook at most what
     * keeps its in-flight count under `perWebhook`: a slow endpoint holds a few slots, never all,
     * and a webhook with a deep backlog cannot hide the others' deliveries behind its own.
     * The lease is taken by a conditional update: of several processes claiming at once, each
     * delivery goes to one (the others' updates find its lease taken and skip it).
     *
     * A webhook with a rate gives each leased delivery the next slot of its schedule
     * (src/Webhooks/Rate.ts); those beyond the slots open now stay queued, in due order, and are
     * not attempts. Webhooks without a rate cost no statement more.
     */
    const claim = Effect.fn("DeliveryRepo.claim")(
      function*(input: {
        now: number
        free: number
        perWebhook: number
        inFlight: ReadonlyMap<string, number>
        leaseMillis: number
      }) {
        const { now, perWebhook } = input
        const due = yield* dueRows({ now, perWebhook })
        const rates = new Map<WebhookId, number>()
        for (const row of due) if (row.perSecond !== null) rates.set(row.webhookId, row.perSecond)
        const slots = new Map<string, number>()
        // Slots are counted from the time they are taken, after the wait for the lock: a slot dated
        // back to the round's start would be one the rate never gave.
        let slotNow = now
        if (rates.size > 0) {
          const rows = yield* slotsOf([...rates.keys()])
          slotNow = Math.max(now, yield* Clock.currentTimeMillis)
          for (const row of rows) slots.set(row.id, firstFree(row.nextSlotAt, slotNow))
        }
        const taken = new Map<string, number>()
        const list: Array<number> = []
        const held = new Set<string>()
        for (const row of due) {
          if (list.length >= input.free) break
          const count = (input.inFlight.get(row.webhookId) ?? 0) + (taken.get(row.webhookId) ?? 0)
          if (count >= perWebhook) continue
          const perSecond = rates.get(row.webhookId)
          const start = slots.get(row.webhookId)
          if (
            perSecond !== undefined && start !== undefined &&
            (taken.get(row.webhookId) ?? 0) >= attemptsAllowed(start, slotNow, perSecond)
          ) {
            held.add(row.webhookId)
            continue
          }
          taken.set(row.webhookId, (taken.get(row.webhookId) ?? 0) + 1)
          list.push(row.id)
        }
        const leased = list.length === 0 ? [] : yield* lease({ ids: list, now, until: now + input.leaseMillis })
        let heldUntil: number | null = null
        if (rates.size > 0) {
          const byWebhook = new Map(due.map((row) => [row.id, row.webhookId]))
          const leasedOf = new Map<string, number>()
          for (const { id } of leased) {
            const webhookId = byWebhook.get(id)
            if (webhookId !== undefined) leasedOf.set(webhookId, (leasedOf.get(webhookId) ?? 0) + 1)
          }
          for (const [webhookId, perSecond] of rates) {
            const start = slots.get(webhookId)
            if (start === undefined) continue
            const next = start + (leasedOf.get(webhookId) ?? 0) * intervalMillis(perSecond)
            if ((leasedOf.get(webhookId) ?? 0) > 0) {
              yield* sql`UPDATE webhooks SET next_slot_at = ${next} WHERE id = ${webhookId}`
            }
            if (held.has(webhookId)) {
              const at = madeFrom(next, perSecond)
              heldUntil = heldUntil === null ? at : Math.min(heldUntil, at)
            }
          }
        }
        const rows = leased.length === 0 ? [] : (yield* claimedById(leased.map((row) => row.id))).map(toClaimed)
        return { rows, heldUntil } satisfies Claim
      },
      (effect) => Effect.orDie(sql.withTransaction(effect))
    )

    /**
     * Logs attempts and moves their deliveries on (delivered, retried at `nextAttemptAt`, or
     * given up), many in one transaction.
     */
    const settle = Effect.fn("DeliveryRepo.settle")(
      function*(settled: ReadonlyArray<Settled>) {
        const outcomes: Array<DeliveryOutcome> = []
        for (const { attempt, deliveryId, next, webhookId } of settled) {
          const disabled = yield* webhooks.recordOutcome(webhookId, attempt)
          // A delivery whose webhook was switched off meanwhile is not retried.
          const rows = yield* sql`UPDATE deliveries SET attempts = attempts + 1,
                       state = CASE WHEN ${next.state} = 'pending' AND EXISTS (
                         SELECT 1 FROM webhooks w WHERE w.id = deliveries.webhook_id AND w.disabled_reason IS NOT NULL
                       ) THEN 'given_up' ELSE ${next.state} END,
                       next_attempt_at = ${next.nextAttemptAt}, lease_until = 0, lease_owner = NULL
                     WHERE id = ${deliveryId} AND lease_owner = ${owner}
                     RETURNING state`.pipe(Effect.flatMap(Schema.decodeUnknown(SettledRows)))
          const ended = rows[0]?.state === "given_up" && next.state === "pending"
          outcomes.push(
            next.state === "delivered"
              ? "delivered"
              : Option.isSome(disabled) || ended
              ? "disabled"
              : next.state === "pending"
              ? "retrying"
              : "given_up"
          )
        }
        return outcomes
      },
      (effect) =>
        Effect.orDie(sql.withTransaction(effect)).pipe(
          // Counted once the outcomes are committed (v1-extensions §X4).
          Effect.flatMap((outcomes) => Effect.forEach(outcomes, countDelivery, { discard: true }))
        )
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

    const outlookQuery = SqlSchema.single({
      Request: Schema.Number,
      Result: Outlook,
      execute: (now) =>
        sql`SELECT
              CASE WHEN (SELECT MAX(seq) FROM events) > (SELECT last_seq FROM outbox_cursors WHERE name = 'webhooks')
                THEN 1 ELSE 0 END AS events_waiting,
              (SELECT MIN(next_attempt_at) FROM deliveries WHERE state = 'pending' AND lease_until <= ${now}) AS due,
              (SELECT MIN(next_attempt_at) FROM deliveries WHERE state = 'pending' AND next_attempt_at > ${now}) AS upcoming,
              (SELECT MIN(lease_until) FROM deliveries WHERE state = 'pending' AND lease_until > ${now}) AS leased`
    })

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
    const depth = SqlSchema.single({
      Request: Schema.Void,
      Result: Depth,
      execute: () =>
        // The events past the cursor as a range closed by the newest: an open range ("seq > cursor")
        // is priced as a third of the table by a planner without statistics, and read whole.
        sql`SELECT (SELECT count(*) FROM events
                    WHERE seq > (SELECT last_seq FROM outbox_cursors WHERE name = 'webhooks')
                      AND seq <= (SELECT MAX(seq) FROM events))
                 + (SELECT count(*) FROM deliveries WHERE state = 'pending') AS depth,
                 (SELECT MIN(next_attempt_at) FROM deliveries WHERE state = 'pending') AS oldest_due_at`
    })(undefined).pipe(Effect.orDie)

    return { fanOut, claim, settle, drop, release, renew, outlook, depth } as const
  })
}) {}
