import { Clock, Context, Duration, Effect, Layer } from "effect"
import { RealTime } from "../Background/RealTime.js"

/**
 * The process's simulated clock (v1-extensions §X5.1): the time the service reads stands still
 * at `now` until it is set forward. Waits (`Effect.sleep`, every timeout) stay real: they bound
 * I/O (an attempt's 15 s, the database's timeouts, a drain) or are the background loops' rests:
 * while the clock stands, the loops look again as often as they would in real time and do what
 * is due at its instant. `POST /test/clock/advance` runs the same jobs' rounds in due
 * order as it moves the clock (src/TestClock/Advance.ts).
 */
export class SimulatedClock extends Context.Tag("TestClock/SimulatedClock")<SimulatedClock, {
  /** The `Clock` the whole process runs on. */
  readonly clock: Clock.Clock
  /** The real clock: for what stays real. */
  readonly real: Clock.Clock
  /** Moves the clock to `millis`; never backwards. */
  readonly setTo: (millis: number) => Effect.Effect<void>
}>() {
  static readonly make = (startsAt: number, real: Clock.Clock): Context.Tag.Service<SimulatedClock> => {
    let now = startsAt
    const clock: Clock.Clock = {
      [Clock.ClockTypeId]: Clock.ClockTypeId,
      unsafeCurrentTimeMillis: () => now,
      currentTimeMillis: Effect.sync(() => now),
      unsafeCurrentTimeNanos: () => BigInt(now) * 1_000_000n,
      currentTimeNanos: Effect.sync(() => BigInt(now) * 1_000_000n),
      sleep: (duration: Duration.Duration) => real.sleep(duration)
    }
    return {
      clock,
      real,
      setTo: (millis) =>
        Effect.sync(() => {
          if (millis > now) now = millis
        })
    }
  }

  /**
   * The simulated clock as a layer, and what stays real with it (`RealTime`: the wire's time, the
   * heap bound's pacing). The `Clock` itself is swapped where the process starts (src/Cli/Commands.ts).
   */
  static readonly layer = (service: Context.Tag.Service<SimulatedClock>) =>
    Layer.mergeAll(
      Layer.succeed(SimulatedClock, service),
      Layer.succeed(RealTime, { currentTimeMillis: service.real.currentTimeMillis })
    )
}
