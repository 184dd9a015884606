import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import {
  makeId,
  type SurveyId,
  surveyId as asSurveyId,
  type WebhookId,
  webhookId as asWebhookId,
  type WorkspaceId,
  workspaceId as asWorkspaceId
} from "../Domain/Ids.js"
import { toIso } from "../Domain/Time.js"
import { DisabledReason, type PreviousSecret } from "../Domain/Webhook.js"
import { SubscribableEventType } from "../Domain/Event.js"
import { SqlDialect } from "../Sql/Dialect.js"
import { Reader } from "../Sql/Reader.js"
import { column, rowShape, type RowOf } from "../Sql/Rows.js"
import { inBatches } from "../Sql/Transactions.js"
import type { HealthMove } from "./Health.js"
import type { WebhookScope } from "./RedeliveryRepo.js"
import { expiredSecretsPurge } from "./SecretPurgeSql.js"
import { decodePreviousSecrets } from "./WebhookRows.js"

/** A configured endpoint as stored: `disabledReason` is null while it is enabled. */
const WebhookColumns = rowShape({
  id: column.map(column.text("w.id"), asWebhookId),
  workspaceId: column.map(column.text("w.workspace_id"), asWorkspaceId),
  surveyId: column.map(column.nullableText("w.survey_id"), (id) => id === null ? null : asSurveyId(id)),
  targetUrl: column.text("w.target_url"),
  secret: column.text("w.secret"),
  previousSecrets: column.map(column.text("w.previous_secrets"), decodePreviousSecrets),
  maxAttemptsPerSecond: column.nullableNum("w.max_attempts_per_second"),
  disabledReason: column.nullableOneOf("w.disabled_reason", DisabledReason.literals)
})

/** A configured endpoint, survey-scoped or workspace-wide (`surveyId` null), with the event types it receives in catalogue order. */
export interface Webhook {
  readonly id: WebhookId
  readonly workspaceId: WorkspaceId
  readonly surveyId: SurveyId | null
  readonly targetUrl: string
  readonly secret: string
  /** Secrets replaced by a rotation, newest first, with when each stops being honoured. */
  readonly previousSecrets: ReadonlyArray<PreviousSecret>
  /** Attempts per second at most; null: no limit. */
  readonly maxAttemptsPerSecond: number | null
  readonly enabled: boolean
  /** Why it was switched off; none while it is enabled. */
  readonly disabledReason: Option.Option<DisabledReason>
  readonly events: ReadonlyArray<SubscribableEventType>
}

const catalogue = SubscribableEventType.literals

/** A webhook beside one of its event types (null when it has none). */
const WebhookTypeColumns = rowShape({
  ...WebhookColumns.fields,
  eventType: column.nullableOneOf("t.event_type", SubscribableEventType.literals)
})

/** One attempt of the delivery log. */
const AttemptColumns = rowShape({
  id: column.text("id"),
  eventId: column.text("event_id"),
  eventType: column.text("event_type"),
  surveyId: column.nullableText("survey_id"),
  ok: column.flag("ok"),
  responseStatus: column.nullableNum("response_status"),
  error: column.nullableText("error"),
  attemptedAt: column.num("attempted_at")
})
export type LoggedAttempt = RowOf<typeof AttemptColumns.fields>

export interface NewAttempt {
  readonly deliveryId: number | null
  readonly scope: "survey" | "workspace"
  readonly workspaceId: string
  readonly surveyId: string | null
  readonly eventId: string
  readonly eventType: string
  readonly ok: boolean
  readonly responseStatus: number | null
  readonly error: string | null
  readonly attemptedAt: number
}

const HealthColumns = rowShape({ disabledReason: column.nullableOneOf("disabled_reason", DisabledReason.literals) })
const SlotColumns = rowShape({ nextSlotAt: column.num("next_slot_at") })

const withTypes = `SELECT ${WebhookTypeColumns.columns}
  FROM webhooks w LEFT JOIN webhook_event_types t ON t.webhook_id = w.id
  WHERE w.workspace_id = ? AND COALESCE(w.survey_id, '') = ?`
const attemptsOf = (scope: "workspace" | "survey") =>
  `SELECT ${AttemptColumns.columns}
  FROM delivery_attempts WHERE ${scope === "workspace" ? "workspace_id" : "survey_id"} = ? AND scope = '${scope}'
  ORDER BY attempted_at DESC, rowid DESC LIMIT ?`
const workspaceAttempts = attemptsOf("workspace")
const surveyAttempts = attemptsOf("survey")

/**
 * The statements of webhook settings and the attempt log. The writes of settings, with the reads
 * they follow (`stored`, `nextSlot`), run inside the caller's transaction (src/Webhooks/Webhooks.ts)
 * and leave a failure of the database to it; the requests' reads of settings and of the log run on
 * the `Reader`, and they and the purges run on their own, a failure of the database a defect.
 */
export class WebhookRepo extends Effect.Service<WebhookRepo>()("Webhooks/WebhookRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const reader = yield* Reader
    const dialect = yield* SqlDialect

    /**
     * The scope's webhook, enabled or disabled, with its event types. One statement, so that the
     * settings and their event types are of one version (a PUT committing in between replaces both).
     */
    const find = Effect.fn("WebhookRepo.find")(function*(workspaceId: WorkspaceId, surveyId: SurveyId | null) {
      const rows = yield* reader.values(withTypes, [workspaceId, surveyId ?? ""]).pipe(Effect.orDie)
      const first = rows[0]
      if (first === undefined) return Option.none<Webhook>()
      const { disabledReason, eventType: _, ...webhook } = WebhookTypeColumns.read(first)
      const types = new Set(rows.map(WebhookTypeColumns.at.eventType))
      return Option.some<Webhook>({
        ...webhook,
        enabled: disabledReason === null,
        disabledReason: Option.fromNullable(disabledReason),
        events: catalogue.filter((type) => types.has(type))
      })
    })

    /**
     * Makes the other writers of a scope's webhook wait for the caller's transaction: SQLite runs
     * one write transaction at a time anyway; PostgreSQL runs them side by side, and two first PUTs
     * of one scope would both find no webhook and both insert one. A transaction-scoped advisory
     * lock on the scope's name serialises them there.
     */
    const lockScope = dialect.choose({
      pg: () => (scope: WebhookScope) =>
        sql`SELECT pg_advisory_xact_lock(hashtext(${`webhook:${scope.workspaceId}:${scope.surveyId ?? ""}`}))`.pipe(
          Effect.asVoid
        ),
      sqlite: () => (_scope: WebhookScope) => Effect.void
    })

    /** The scope's webhook as stored, without its event types; none when the scope has none. */
    const stored = (scope: WebhookScope) =>
      sql`SELECT ${sql.literal(WebhookColumns.columns)}
          FROM webhooks w
          WHERE workspace_id = ${scope.workspaceId} AND COALESCE(survey_id, '') = ${scope.surveyId ?? ""}`.values.pipe(
        Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), WebhookColumns.read))
      )

    /**
     * Points an existing webhook at a new target with a new secret and rate, enabled, with a clean
     * record of failures and no replaced secrets; its event types are cleared for `setEventTypes`.
     */
    const replace = (input: {
      readonly id: WebhookId
      readonly targetUrl: string
      readonly secret: string
      readonly maxAttemptsPerSecond: number | null
      readonly now: number
    }) =>
      Effect.zipRight(
        sql`UPDATE webhooks SET target_url = ${input.targetUrl}, secret = ${input.secret}, previous_secrets = '[]',
              max_attempts_per_second = ${input.maxAttemptsPerSecond}, updated_at = ${toIso(input.now)},
              disabled_reason = NULL, failing_since = NULL
            WHERE id = ${input.id}`,
        sql`DELETE FROM webhook_event_types WHERE webhook_id = ${input.id}`
      ).pipe(Effect.asVoid)

    /**
     * Inserts a scope's first webhook; answers its id. The webhook receives the events committed
     * after it: those already committed predate it. PostgreSQL numbers an event at insert, not at
     * commit, so one still being written may hold a number below the highest committed one. The
     * insert waits for the transactions still writing events and holds new ones back until the
     * caller's transaction commits (as the fan-out's settled read does, src/Sql/Dialect.ts
     * settledSeq): then every event numbered up to the highest one has committed before the
     * webhook, and every later one commits after it with a higher number. Registrations are rare
     * and their transaction short: the lock stays to its end.
     */
    const insert = (input: {
      readonly scope: WebhookScope
      readonly targetUrl: string
      readonly secret: string
      readonly maxAttemptsPerSecond: number | null
      readonly now: number
    }) =>
      Effect.gen(function*() {
        const id = asWebhookId(makeId("whk"))
        const now = toIso(input.now)
        yield* dialect.holdLogWriters("events")
        yield* sql`INSERT INTO webhooks (id, workspace_id, survey_id, target_url, secret, max_attempts_per_second, since_seq,
                                         created_at, updated_at)
                   SELECT ${id}, ${input.scope.workspaceId}, ${input.scope.surveyId}, ${input.targetUrl}, ${input.secret},
                          ${input.maxAttemptsPerSecond}, COALESCE(MAX(seq), 0), ${now}, ${now} FROM events`
        return id
      })

    /** Stores the event types a webhook receives (after `insert`, or `replace` cleared them). */
    const setEventTypes = (id: WebhookId, events: ReadonlyArray<SubscribableEventType>) =>
      sql`INSERT INTO webhook_event_types ${sql.insert(events.map((eventType) => ({ webhookId: id, eventType })))}`.pipe(
        Effect.asVoid
      )

    /** Stores a webhook's signing secret and the replaced ones still honoured. */
    const setSecret = (id: WebhookId, secret: string, previous: ReadonlyArray<PreviousSecret>, now: number) =>
      sql`UPDATE webhooks SET secret = ${secret}, previous_secrets = ${JSON.stringify(previous)}, updated_at = ${toIso(now)}
          WHERE id = ${id}`.pipe(Effect.asVoid)

    /**
     * The next free slot of a webhook's delivery rate as stored (src/Webhooks/Rate.ts), its row
     * locked until the caller's transaction ends on PostgreSQL; 0 when none was taken.
     */
    const nextSlot = (id: WebhookId) =>
      sql`SELECT ${sql.literal(SlotColumns.columns)} FROM webhooks w WHERE w.id = ${id}${dialect.lockRows("w")}`.values.pipe(
        Effect.map((rows) => rows[0] === undefined ? 0 : SlotColumns.at.nextSlotAt(rows[0]))
      )

    const setNextSlot = (id: WebhookId, at: number) =>
      sql`UPDATE webhooks SET next_slot_at = ${at} WHERE id = ${id}`.pipe(Effect.asVoid)

    /** Clears a webhook's disabled reason and record of failures. */
    const reenable = (id: WebhookId, now: number) =>
      sql`UPDATE webhooks SET disabled_reason = NULL, failing_since = NULL, updated_at = ${toIso(now)}
          WHERE id = ${id}`.pipe(Effect.asVoid)

    /** Deletes a webhook; its pending deliveries end unsent. */
    const remove = (id: WebhookId) =>
      Effect.zipRight(
        sql`UPDATE deliveries SET state = 'given_up', lease_until = 0 WHERE webhook_id = ${id} AND state = 'pending'`,
        sql`DELETE FROM webhooks WHERE id = ${id}`
      ).pipe(Effect.asVoid)

    const recordAttempt = (attempt: NewAttempt) =>
      sql`INSERT INTO delivery_attempts ${
        sql.insert({
          id: makeId("dlv"),
          deliveryId: attempt.deliveryId,
          scope: attempt.scope,
          workspaceId: attempt.workspaceId,
          surveyId: attempt.surveyId,
          eventId: attempt.eventId,
          eventType: attempt.eventType,
          ok: attempt.ok ? 1 : 0,
          responseStatus: attempt.responseStatus,
          error: attempt.error,
          attemptedAt: attempt.attemptedAt
        })
      }`

    /**
     * Moves a webhook's record of failures on as src/Webhooks/Health.ts says: cleared, or failing
     * since its first failure and switched off when the move says so. Switched off, its pending
     * deliveries end without being attempted. Answers the reason when this move switched it off.
     */
    const recordHealth = Effect.fn("WebhookRepo.recordHealth")(function*(webhookId: WebhookId, move: HealthMove) {
      if (move._tag === "Succeeded") {
        yield* sql`UPDATE webhooks SET failing_since = NULL WHERE id = ${webhookId} AND failing_since IS NOT NULL`
        return Option.none<DisabledReason>()
      }
      const rows = yield* sql`UPDATE webhooks SET
              disabled_reason = CASE WHEN ${move.gone ? 1 : 0} = 1 THEN 'gone'
                                     WHEN failing_since < ${move.failingBefore} THEN 'failing' END,
              failing_since = COALESCE(failing_since, ${move.attemptedAt})
            WHERE id = ${webhookId} AND disabled_reason IS NULL
            RETURNING ${sql.literal(HealthColumns.columns)}`.values
      const reason = Option.fromNullable(rows[0] === undefined ? null : HealthColumns.at.disabledReason(rows[0]))
      if (Option.isSome(reason)) {
        // Leases stay: an attempt in flight still settles its delivery, and nothing requeues it meanwhile.
        yield* sql`UPDATE deliveries SET state = 'given_up'
                   WHERE webhook_id = ${webhookId} AND state = 'pending'`
        yield* Effect.logWarning("webhook disabled").pipe(
          Effect.annotateLogs({ webhookId, reason: reason.value })
        )
      }
      return reason
    }, Effect.orDie)

    /** Logs an attempt of a webhook and moves its record of failures on; inside the caller's transaction. */
    const recordOutcome = (webhookId: WebhookId, attempt: NewAttempt, move: HealthMove) =>
      Effect.zipRight(recordAttempt(attempt).pipe(Effect.orDie), recordHealth(webhookId, move))

    /** Newest attempts first: the workspace webhook's when `surveyId` is null, else the survey webhook's. */
    const attempts = Effect.fn("WebhookRepo.attempts")(function*(
      scope: { workspaceId: string; surveyId: string | null },
      limit: number
    ) {
      const rows = yield* (scope.surveyId === null
        ? reader.values(workspaceAttempts, [scope.workspaceId, limit])
        : reader.values(surveyAttempts, [scope.surveyId, limit])).pipe(Effect.orDie)
      return rows.map(AttemptColumns.read)
    })

    /**
     * Deletes attempts older than the cutoff, oldest first, WorkBatches' `purge` per statement;
     * returns how many. The range is closed by the oldest attempt: an open one ("older than") is
     * priced by a planner without statistics as a third of the table, and the table read whole on
     * every purge.
     */
    const purgeAttempts = Effect.fn("WebhookRepo.purgeAttempts")(function*(olderThan: number) {
      return yield* inBatches("webhook attempt purge", (limit) =>
        sql`
          DELETE FROM delivery_attempts WHERE id IN (
            SELECT id FROM delivery_attempts
            WHERE attempted_at >= (SELECT MIN(attempted_at) FROM delivery_attempts) AND attempted_at < ${olderThan}
            ORDER BY attempted_at LIMIT ${limit})
          RETURNING 1 AS n`.pipe(Effect.map((rows) => rows.length), Effect.orDie))
    })

    const purgeExpiredSecrets = expiredSecretsPurge(sql)

    return {
      find,
      lockScope,
      stored,
      replace,
      insert,
      setEventTypes,
      setSecret,
      nextSlot,
      setNextSlot,
      reenable,
      remove,
      recordAttempt,
      recordOutcome,
      attempts,
      purgeAttempts,
      purgeExpiredSecrets
    } as const
  })
}) {}
