import { Duration, Effect, Option, Schedule, ScheduleDecision, ScheduleIntervals } from "effect"

/**
 * The delays between attempts (decisions §7, the Standard Webhooks schedule): the first attempt
 * is immediate, then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h, each stretched by up to 10%
 * of random jitter (never shortened). After the eighth attempt the delivery is given up.
 */
export const retrySchedule = Schedule.fromDelays(
  "5 seconds",
  "5 minutes",
  "30 minutes",
  "2 hours",
  "5 hours",
  "10 hours",
  "10 hours"
).pipe(Schedule.jitteredWith({ min: 1, max: 1.1 }))

export const maxAttempts = 8

/**
 * The wait before the next attempt once `attemptsMade` attempts failed, or none when the
 * schedule is exhausted. Deliveries live in the database, not in a fiber, so the schedule is
 * stepped to the attempt's position instead of being held by a sleeping retry loop.
 */
export const delayAfter = (attemptsMade: number, now: number): Effect.Effect<Option.Option<Duration.Duration>> =>
  Effect.gen(function*() {
    let state: unknown = retrySchedule.initial
    for (let step = 1; step <= attemptsMade; step++) {
      const [next, , decision] = yield* retrySchedule.step(now, undefined, state)
      if (ScheduleDecision.isDone(decision)) return Option.none()
      if (step === attemptsMade) {
        // Whole milliseconds, rounded up: jitter only ever lengthens a delay.
        return Option.some(Duration.millis(Math.ceil(ScheduleIntervals.start(decision.intervals) - now)))
      }
      state = next
    }
    return Option.none()
  })
