import { Clock, Context, Effect } from "effect"

/**
 * The time that must stay real even when the process runs on a simulated clock (v1-extensions
 * §X5.1): the wire's (a webhook's `webhook-timestamp`, which receivers' libraries check against
 * their own clocks) and the process's own (how often the heap bound may pause it). The service's
 * `Clock` unless a simulated clock provides the real one here.
 */
export class RealTime extends Context.Reference<RealTime>()("Background/RealTime", {
  defaultValue: (): { readonly currentTimeMillis: Effect.Effect<number> } => ({ currentTimeMillis: Clock.currentTimeMillis })
}) {}

/** Milliseconds since the epoch on the real time. */
export const realTimeMillis = Effect.flatMap(RealTime, (time) => time.currentTimeMillis)
