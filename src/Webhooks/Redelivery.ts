import { Duration, Effect } from "effect"
import type { WebhookId } from "../Domain/Ids.js"
import { toIso } from "../Domain/Time.js"
import { batchCommitted, Transactions } from "../Sql/Transactions.js"
import { DeliverySettings } from "./DeliverySettings.js"
import { type EventKey, RedeliveryRepo, type StoredEvent, type WebhookScope } from "./RedeliveryRepo.js"

/** How long events are kept, and so how far back they can be sent again (v1-extensions §X1.2). */
export const eventRetention = Duration.days(30)

/** Bounds the batched loops below: far more steps than 30 days of events can take. */
const maxSteps = 1_000_000

/** Queuing events again for one webhook (v1-extensions §X1.2, §X1.3), and the end of their retention. */
export class Redelivery extends Effect.Service<Redelivery>()("Webhooks/Redelivery", {
  effect: Effect.gen(function*() {
    const repo = yield* RedeliveryRepo
    const transactions = yield* Transactions

    /** The event of this scope with that id, when it is at most 30 days old at `now`. */
    const event = Effect.fn("Redelivery.event")(function*(scope: WebhookScope, eventId: string, now: number) {
      return yield* repo.event(scope, eventId, toIso(now - Duration.toMillis(eventRetention)))
    })

    /** Queues one event for the webhook; answers false when a delivery of it was already pending. */
    const redeliver = Effect.fn("Redelivery.redeliver")(function*(input: {
      readonly webhookId: WebhookId
      readonly event: StoredEvent
      readonly now: number
    }) {
      return yield* repo.redeliver(input.webhookId, input.event, input.now)
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
      let after: EventKey = { createdAt: "", seq: 0 }
      let queued = 0
      for (let step = 0; step < maxSteps; step++) {
        const page = yield* repo.eventsAfter({ scope, since, until, after, limit: batch })
        const last = page[page.length - 1]
        if (last === undefined) break
        after = last
        queued += yield* repo.recoverEvents({ webhookId, scope, seqs: page.map((row) => row.seq), now })
        yield* batchCommitted("webhook recovery")
      }
      return queued
    })

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
        const seqs = yield* repo.expiredEvents(cutoff, batch)
        if (seqs.length === 0) break
        // The deliveries and their events go together or not at all.
        yield* transactions.within(repo.deleteEvents(seqs)).pipe(Effect.orDie)
        purged += seqs.length
        yield* batchCommitted("event purge")
      }
      return purged
    })

    return { event, redeliver, recover, purgeEvents } as const
  })
}) {}
