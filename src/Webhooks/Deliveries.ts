import { Clock, Effect, Metric, Option } from "effect"
import type { WebhookId } from "../Domain/Ids.js"
import { Transactions } from "../Sql/Transactions.js"
import { webhookDeliveries } from "../Telemetry/Metrics.js"
import { type ClaimedDelivery, DeliveryRepo, type Settled } from "./DeliveryRepo.js"
import { healthMove } from "./Health.js"
import { attemptsAllowed, firstFree, intervalMillis, madeFrom } from "./Rate.js"
import { WebhookRepo } from "./WebhookRepo.js"

/** What a claim leased, and when a webhook held back by its rate may next be attempted (none when none was). */
export interface Claim {
  readonly rows: ReadonlyArray<ClaimedDelivery>
  readonly heldUntil: number | null
}

/** What became of an attempt, as `webhook_deliveries_total` counts it. */
type DeliveryOutcome = "delivered" | "retrying" | "given_up" | "disabled"

const byOutcome: Record<DeliveryOutcome, Metric.Metric.Counter<number>> = {
  delivered: Metric.tagged(webhookDeliveries, "outcome", "delivered"),
  retrying: Metric.tagged(webhookDeliveries, "outcome", "retrying"),
  given_up: Metric.tagged(webhookDeliveries, "outcome", "given_up"),
  disabled: Metric.tagged(webhookDeliveries, "outcome", "disabled")
}

const countDelivery = (outcome: DeliveryOutcome) => Metric.increment(byOutcome[outcome])

/**
 * The delivery worker's transactions: the fan-out of new events to deliveries, the claim of due
 * deliveries within each webhook's share and rate, and the settling of finished attempts. Each is
 * one transaction over src/Webhooks/DeliveryRepo.ts's statements.
 */
export class Deliveries extends Effect.Service<Deliveries>()("Webhooks/Deliveries", {
  effect: Effect.gen(function*() {
    const transactions = yield* Transactions
    const repo = yield* DeliveryRepo
    const webhooks = yield* WebhookRepo


    /**
     * Creates one delivery per new event and matching webhook, and moves the cursor past those
     * events, in one transaction: each event fans out once, and a crash repeats nothing. The
     * cursor never passes how far the outbox is settled, read first outside the transaction.
     * Answers how many events it passed.
     */
    const fanOut = Effect.fn("Deliveries.fanOut")(function*(now: number, batch: number) {
      const upTo = yield* repo.settledEvents
      return yield* transactions.withinOrDie(Effect.gen(function*() {
        const range = yield* repo.cursor(batch, upTo)
        if (Option.isNone(range)) return 0
        yield* repo.fanOutRange(range.value, now)
        yield* repo.moveCursor(range.value.to)
        return range.value.to - range.value.from
      }))
    })

    /**
     * Leases up to `free` due deliveries, oldest first, taking from each webhook at most what
     * keeps its in-flight count under `perWebhook`: a slow endpoint holds a few slots, never all,
     * and a webhook with a deep backlog cannot hide the others' deliveries behind its own.
     *
     * A webhook with a rate gives each leased delivery the next slot of its schedule
     * (src/Webhooks/Rate.ts); those beyond the slots open now stay queued, in due order, and are
     * not attempts. Webhooks without a rate cost no statement more.
     */
    const claim = Effect.fn("Deliveries.claim")(function*(input: {
      now: number
      free: number
      perWebhook: number
      inFlight: ReadonlyMap<string, number>
      leaseMillis: number
    }) {
      const { now, perWebhook } = input
      return yield* transactions.withinOrDie(Effect.gen(function*() {
        const due = yield* repo.due(now, perWebhook)
        const rates = new Map<WebhookId, number>()
        for (const row of due) if (row.perSecond !== null) rates.set(row.webhookId, row.perSecond)
        const slots = new Map<string, number>()
        // Slots are counted from the time they are taken, after the wait for the lock: a slot dated
        // back to the round's start would be one the rate never gave.
        let slotNow = now
        if (rates.size > 0) {
          const rows = yield* repo.slots([...rates.keys()])
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
        const leased = list.length === 0 ? [] : yield* repo.lease(list, now, now + input.leaseMillis)
        let heldUntil: number | null = null
        if (rates.size > 0) {
          const byWebhook = new Map(due.map((row) => [row.id, row.webhookId]))
          const leasedOf = new Map<WebhookId, number>()
          for (const id of leased) {
            const webhookId = byWebhook.get(id)
            if (webhookId !== undefined) leasedOf.set(webhookId, (leasedOf.get(webhookId) ?? 0) + 1)
          }
          for (const [webhookId, perSecond] of rates) {
            const start = slots.get(webhookId)
            if (start === undefined) continue
            const next = start + (leasedOf.get(webhookId) ?? 0) * intervalMillis(perSecond)
            if ((leasedOf.get(webhookId) ?? 0) > 0) yield* webhooks.setNextSlot(webhookId, next)
            if (held.has(webhookId)) {
              const at = madeFrom(next, perSecond)
              heldUntil = heldUntil === null ? at : Math.min(heldUntil, at)
            }
          }
        }
        const rows = leased.length === 0 ? [] : yield* repo.claimed(leased)
        return { rows, heldUntil } satisfies Claim
      }))
    })

    /**
     * Logs attempts and moves their deliveries on (delivered, retried at `nextAttemptAt`, or
     * given up), many in one transaction; each attempt moves its webhook's record of failures
     * on. Counted once the outcomes are committed (v1-extensions §X4).
     */
    const settle = Effect.fn("Deliveries.settle")(function*(settled: ReadonlyArray<Settled>) {
      const outcomes = yield* transactions.withinOrDie(Effect.gen(function*() {
        const outcomes: Array<DeliveryOutcome> = []
        for (const { attempt, deliveryId, next, webhookId } of settled) {
          const disabled = yield* webhooks.recordOutcome(webhookId, attempt, healthMove(attempt))
          // A delivery whose webhook was switched off meanwhile is not retried.
          const state = yield* repo.settleDelivery(deliveryId, next)
          const ended = state === "given_up" && next.state === "pending"
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
      }))
      yield* Effect.forEach(outcomes, countDelivery, { discard: true })
    })

    return { fanOut, claim, settle } as const
  })
}) {}
