import { Context, Duration, type Effect } from "effect"

/** Tuning of the delivery worker; the defaults are the production values. */
export class DeliverySettings extends Context.Reference<DeliverySettings>()("Webhooks/DeliverySettings", {
  defaultValue: () => ({
    /** How often the outbox is read when nothing wakes the worker (events written by the CLI). */
    pollInterval: Duration.millis(100),
    /** Attempts in flight at once, over all webhooks. */
    maxConcurrent: 64,
    /** Attempts in flight at once for one webhook, so one slow endpoint cannot take every slot. */
    perWebhook: 16,
    /** Per attempt (decisions §7). */
    attemptTimeout: Duration.seconds(15),
    /** Outbox events read per round. */
    batch: 1000,
    /** How often attempts past retention are deleted. */
    purgeInterval: Duration.hours(1)
  })
}) {}

/** What one round of the delivery worker did, and when it means to look again. */
export interface DeliveryRound {
  /** When the round started. */
  readonly at: number
  /** Deliveries it claimed and started attempting. */
  readonly claimed: number
  /** Attempts in flight once it was done. */
  readonly inFlight: number
  /** Until when the worker sleeps unless a finishing attempt wakes it. */
  readonly sleepUntil: number
}

/**
 * Told about every finished round of the delivery worker: nothing in production; tests wait on
 * it to know that the worker has looked at the outbox and what it did, rather than sleeping.
 */
export class DeliveryRounds extends Context.Reference<DeliveryRounds>()("Webhooks/DeliveryRounds", {
  defaultValue: (): { readonly completed: ((round: DeliveryRound) => Effect.Effect<void>) | undefined } => ({
    completed: undefined
  })
}) {}
