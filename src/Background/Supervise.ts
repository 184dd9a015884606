import { Cause, Clock, Duration, Effect, Schedule, ScheduleDecision, ScheduleIntervals } from "effect"
import { CurrentLoop, type LoopReport, LoopRounds } from "./LoopRounds.js"

/**
 * How long a failing background loop waits before each try: 1 s, doubling, at most 30 s. A loop
 * whose database is gone then tries a few times a minute, not ten times a second, and is back
 * within 30 s of the database.
 */
export const retryBackoff: Schedule.Schedule<Duration.Duration> = Schedule.delays(
  Schedule.union(Schedule.exponential("1 second"), Schedule.spaced("30 seconds"))
)

/** How long a loop that ended (rather than failed) waits before it starts again. */
const restartAfter = Duration.seconds(1)

/** A loop of the current graph, reporting its rounds until the scope closes (src/Background/LoopRounds.ts). */
export const registerLoop = (name: string) => Effect.flatMap(LoopRounds, (rounds) => rounds.register(name))

const failures = (count: number) => `${count} ${count === 1 ? "failure" : "failures"}`

/**
 * The one retry policy of the background loops: a failed loop starts again after the next delay
 * of `retry`, logging once with the cause when it starts failing ("… failed; retrying in 1s") and
 * once when it is through a round again ("… recovered after N failures"); the delays start over
 * then. A round is through when the loop says it rests (`parked`, `waiting`): `watch` makes the
 * loop's report say so here.
 */
const retryPolicy = (name: string, retry: Schedule.Schedule<Duration.Duration>, report: LoopReport) =>
  Effect.gen(function*() {
    let failed = 0
    let cause: Cause.Cause<unknown> = Cause.empty
    const delays = yield* Schedule.driver(
      Schedule.onDecision(retry, (delay, decision) => {
        if (ScheduleDecision.isDone(decision)) return Effect.void
        const sleep = report.parked(ScheduleIntervals.start(decision.intervals))
        return failed === 1
          ? Effect.zipRight(Effect.logError(`${name} failed; retrying in ${Duration.format(delay)}`, cause), sleep)
          : sleep
      })
    )
    const recovered = Effect.suspend(() => {
      if (failed === 0) return Effect.void
      const count = failed
      failed = 0
      cause = Cause.empty
      return Effect.zipRight(delays.reset, Effect.logInfo(`${name} recovered after ${failures(count)}`))
    })
    return {
      /** Waits out the next delay after a failure; an interruption goes on. */
      failed: (failure: Cause.Cause<unknown>) =>
        Cause.isInterruptedOnly(failure)
          ? Effect.failCause(failure)
          : Effect.suspend(() => {
            failed++
            cause = failure
            // A retry schedule that ended leaves the loop to start again at once.
            return Effect.ignore(delays.next(undefined))
          }),
      watch: (loop: LoopReport): LoopReport => ({
        ...loop,
        parked: (until) => Effect.zipRight(recovered, loop.parked(until)),
        waiting: (until) => Effect.zipRight(recovered, loop.waiting(until))
      })
    }
  })

/**
 * Runs `loop` in the background of the current scope for as long as the scope lives: a failure
 * or defect starts it again after the next delay of `retry` (by default `retryBackoff`), logged
 * once when the loop starts failing and once when it recovers; closing the scope interrupts it.
 * Every background loop of the service goes through here.
 *
 * The loop reports its rounds through `CurrentLoop` (its own `report` when others must wake it,
 * else one registered under `name`); sleeps between tries are reported here.
 *
 * The loop itself is not traced (a span per poll would bury the work in noise); the work it
 * does is, where it says so with `traced`.
 */
export const supervise = <E, R>(
  name: string,
  loop: Effect.Effect<unknown, E, R>,
  options: { readonly retry?: Schedule.Schedule<Duration.Duration>; readonly report?: LoopReport } = {}
) =>
  Effect.gen(function*() {
    const report = options.report ?? (yield* registerLoop(name))
    const policy = yield* retryPolicy(name, options.retry ?? retryBackoff, report)
    const ended = Effect.flatMap(Clock.currentTimeMillis, (now) =>
      Effect.zipRight(report.parked(now + Duration.toMillis(restartAfter)), Effect.sleep(restartAfter)))
    yield* loop.pipe(
      Effect.matchCauseEffect({ onFailure: policy.failed, onSuccess: () => ended }),
      Effect.forever,
      Effect.provideService(CurrentLoop, policy.watch(report)),
      Effect.withTracerEnabled(false),
      Effect.forkScoped
    )
  })

/** Work inside a background loop that is traced: a root span of its own, whatever the loop's setting. */
export const traced = (name: string) => <A, E, R>(work: Effect.Effect<A, E, R>) =>
  work.pipe(Effect.withSpan(name, { root: true }), Effect.withTracerEnabled(true))
