import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { makeId, SurveyId, WebhookId, webhookId as asWebhookId, WorkspaceId } from "../Domain/Ids.js"
import { toIso } from "../Domain/Time.js"
import { DisabledReason, type PreviousSecret, PreviousSecrets } from "../Domain/Webhook.js"
import { SubscribableEventType } from "../Domain/Event.js"
import { SqlDialect } from "../Sql/Dialect.js"
import { inBatches } from "../Sql/Transactions.js"
import type { HealthMove } from "./Health.js"
import type { WebhookScope } from "./RedeliveryRepo.js"
import { expiredSecretsPurge } from "./SecretPurgeSql.js"

/** A configured endpoint as stored: `disabledReason` is null while it is enabled. */
const WebhookRow = Schema.Struct({
  id: WebhookId,
  workspaceId: WorkspaceId,
  surveyId: Schema.NullOr(SurveyId),
  targetUrl: Schema.String,
  secret: Schema.String,
  previousSecrets: Schema.parseJson(PreviousSecrets),
  maxAttemptsPerSecond: Schema.NullOr(Schema.Number),
  disabledReason: Schema.NullOr(DisabledReason)
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
const WebhookTypeRow = Schema.Struct({ ...WebhookRow.fields, eventType: Schema.NullOr(SubscribableEventType) })

/** A flag stored as 0 or 1. */
const Flag = Schema.transform(Schema.Literal(0, 1), Schema.Boolean, {
  strict: true,
  decode: (stored) => stored === 1,
  encode: (flag) => (flag ? 1 : 0)
})

/** One attempt of the delivery log. */
const LoggedAttempt = Schema.Struct({
  id: Schema.String,
  eventId: Schema.String,
  eventType: Schema.String,
  surveyId: Schema.NullOr(Schema.String),
  ok: Flag,
  responseStatus: Schema.NullOr(Schema.Number),
  error: Schema.NullOr(Schema.String),
  attemptedAt: Schema.Number
})
export type LoggedAttempt = typeof LoggedAttempt.Type

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

const Scope = Schema.Struct({ workspaceId: WorkspaceId, surveyId: Schema.NullOr(SurveyId) })
const HealthRow = Schema.Struct({ disabledReason: Schema.NullOr(DisabledReason) })
const SlotRow = Schema.Struct({ nextSlotAt: Schema.Number })

/**
 * The statements of webhook settings and the attempt log. The writes of settings run inside the
 * caller's transaction (src/Webhooks/Webhooks.ts) and leave a failure of the database to it; the
 * reads and the purges run on their own, a failure of the database a defect.
 */
export class WebhookRepo extends Effect.Service<WebhookRepo>()("Webhooks/WebhookRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const dialect = yield* SqlDialect

    const findScope = SqlSchema.findOne({
      Request: Scope,
      Result: WebhookRow,
      execute: ({ surveyId, workspaceId }) =>
        sql`SELECT id, workspace_id, survey_id, target_url, secret, previous_secrets, max_attempts_per_second, disabled_reason
            FROM webhooks
            WHERE workspace_id = ${workspaceId} AND COALESCE(survey_id, '') = ${surveyId ?? ""}`
    })

    // One statement, so that the settings and their event types are of one version (a PUT
    // committing in between replaces both).
    const findWithTypes = SqlSchema.findAll({
      Request: Scope,
      Result: WebhookTypeRow,
      execute: ({ surveyId, workspaceId }) =>
        sql`SELECT w.id, w.workspace_id, w.survey_id, w.target_url, w.secret, w.previous_secrets, w.max_attempts_per_second,
                   w.disabled_reason, t.event_type
            FROM webhooks w LEFT JOIN webhook_event_types t ON t.webhook_id = w.id
            WHERE w.workspace_id = ${workspaceId} AND COALESCE(w.survey_id, '') = ${surveyId ?? ""}`
    })

    /** The scope's webhook, enabled or disabled, with its event types. */
    const find = Effect.fn("WebhookRepo.find")(function*(workspaceId: WorkspaceId, surveyId: SurveyId | null) {
      const rows = yield* findWithTypes({ workspaceId, surveyId }).pipe(Effect.orDie)
      const first = rows[0]
      if (first === undefined) return Option.none<Webhook>()
      const { disabledReason, eventType: _, ...webhook } = first
      const types = new Set(rows.map((row) => row.eventType))
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
      findScope({ workspaceId: scope.workspaceId, surveyId: scope.surveyId }).pipe(
        Effect.catchTag("ParseError", Effect.die)
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

    const slotRows = SqlSchema.findAll({
      Request: WebhookId,
      Result: SlotRow,
      execute: (id) => sql`SELECT next_slot_at FROM webhooks w WHERE w.id = ${id}${dialect.lockRows("w")}`
    })

    /**
     * The next free slot of a webhook's delivery rate as stored (src/Webhooks/Rate.ts), its row
     * locked until the caller's transaction ends on PostgreSQL; 0 when none was taken.
     */
    const nextSlot = (id: WebhookId) =>
      slotRows(id).pipe(
        Effect.map((rows) => rows[0]?.nextSlotAt ?? 0),
        Effect.catchTag("ParseError", Effect.die)
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

    const moveHealth = SqlSchema.findAll({
      Request: Schema.Struct({
        webhookId: WebhookId,
        gone: Schema.Boolean,
        failingBefore: Schema.Number,
        attemptedAt: Schema.Number
      }),
      Result: HealthRow,
      execute: ({ attemptedAt, failingBefore, gone, webhookId }) =>
        sql`UPDATE webhooks SET
              disabled_reason = CASE WHEN ${gone ? 1 : 0} = 1 THEN 'gone'
                                     WHEN failing_since < ${failingBefore} THEN 'failing' END,
              failing_since = COALESCE(failing_since, ${attemptedAt})
            WHERE id = ${webhookId} AND disabled_reason IS NULL
            RETURNING disabled_reason`
    })

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
      const rows = yield* moveHealth({
        webhookId,
        gone: move.gone,
        failingBefore: move.failingBefore,
        attemptedAt: move.attemptedAt
      })
      const reason = Option.fromNullable(rows[0]?.disabledReason)
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

    const listWorkspace = SqlSchema.findAll({
      Request: Schema.Struct({ workspaceId: Schema.String, limit: Schema.Number }),
      Result: LoggedAttempt,
      execute: ({ limit, workspaceId }) =>
        sql`SELECT id, event_id, event_type, survey_id, ok, response_status, error, attempted_at
            FROM delivery_attempts WHERE workspace_id = ${workspaceId} AND scope = 'workspace'
            ORDER BY attempted_at DESC, rowid DESC LIMIT ${limit}`
    })

    const listSurvey = SqlSchema.findAll({
      Request: Schema.Struct({ surveyId: Schema.String, limit: Schema.Number }),
      Result: LoggedAttempt,
      execute: ({ limit, surveyId }) =>
        sql`SELECT id, event_id, event_type, survey_id, ok, response_status, error, attempted_at
            FROM delivery_attempts WHERE survey_id = ${surveyId} AND scope = 'survey'
            ORDER BY attempted_at DESC, rowid DESC LIMIT ${limit}`
    })

    /** Newest attempts first: the workspace webhook's when `surveyId` is null, else the survey webhook's. */
    const attempts = Effect.fn("WebhookRepo.attempts")(function*(
      scope: { workspaceId: string; surveyId: string | null },
      limit: number
    ) {
      return yield* (scope.surveyId === null
        ? listWorkspace({ workspaceId: scope.workspaceId, limit })
        : listSurvey({ surveyId: scope.surveyId, limit })).pipe(Effect.orDie)
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
