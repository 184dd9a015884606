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

/** The longest wait a receiver's `Retry-After` can impose (v1-extensions §X1.5). */
export const maxRetryAfter = Duration.hours(10)

const httpDate = /^[A-Za-z]{3}, \d{2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/

/**
 * The wait a `Retry-After` header asks for, at `now`: delay-seconds or an HTTP date (RFC 9110
 * §10.2.3), capped at `maxRetryAfter`; none when the header is absent or malformed.
 */
export const retryAfterDelay = (header: string | null, now: number): Option.Option<Duration.Duration> => {
  if (header === null) return Option.none()
  const value = header.trim()
  const millis = /^\d{1,12}$/.test(value)
    ? Number(value) * 1000
    : httpDate.test(value)
    ? Date.parse(value) - now
    : Number.NaN
  if (!Number.isFinite(millis)) return Option.none()
  return Option.some(Duration.min(Duration.millis(Math.max(0, millis)), maxRetryAfter))
}

/**
 * When a failed delivery is attempted next, or none when it is given up: the schedule's next
 * step, unless the receiver asked for a longer wait with `Retry-After`.
 */
export const nextAttemptAt = (input: {
  readonly attemptsMade: number
  readonly finishedAt: number
  readonly retryAfter: string | null
}): Effect.Effect<Option.Option<number>> =>
  Effect.map(delayAfter(input.attemptsMade, input.finishedAt), (scheduled) =>
    Option.map(scheduled, (delay) => {
      const asked = retryAfterDelay(input.retryAfter, input.finishedAt)
      return input.finishedAt + Duration.toMillis(Option.match(asked, {
        onNone: () => delay,
        onSome: (wait) => Duration.max(delay, wait)
      }))
    }))
