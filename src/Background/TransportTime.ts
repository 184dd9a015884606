import { Clock, Context, Effect } from "effect"

/**
 * The time that receivers and peers see on the wire (a webhook's `webhook-timestamp`): the
 * service's `Clock` unless the process runs on a simulated clock (v1-extensions §X5.1), where
 * it stays real, since receivers' libraries reject signatures far from their own clock.
 */
export class TransportTime extends Context.Reference<TransportTime>()("Background/TransportTime", {
  defaultValue: (): { readonly currentTimeMillis: Effect.Effect<number> } => ({ currentTimeMillis: Clock.currentTimeMillis })
}) {}

/** Milliseconds since the epoch on the wire's time. */
export const transportTimeMillis = Effect.flatMap(TransportTime, (time) => time.currentTimeMillis)
