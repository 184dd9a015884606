import { Cause, Effect, Schedule, ScheduleDecision, ScheduleIntervals } from "effect"
import { CurrentLoop, type LoopReport, LoopRounds, parked } from "./LoopRounds.js"

/** How long a failed background loop waits before it starts again. */
export const restartAfter = Schedule.spaced("1 second")

const logFailure = (name: string) => (cause: Cause.Cause<unknown>) =>
  Cause.isInterruptedOnly(cause) ? Effect.failCause(cause) : Effect.logError(`${name} failed; restarting`, cause)

/** `schedule`, telling the current loop (src/Background/LoopRounds.ts) until when each of its sleeps lasts. */
const reported = <Out, In, R>(schedule: Schedule.Schedule<Out, In, R>) =>
  Schedule.onDecision(schedule, (_, decision) =>
    ScheduleDecision.isDone(decision) ? Effect.void : parked(ScheduleIntervals.start(decision.intervals)))

/** A loop of the current graph, reporting its rounds until the scope closes (src/Background/LoopRounds.ts). */
export const registerLoop = (name: string) => Effect.flatMap(LoopRounds, (rounds) => rounds.register(name))

/**
 * Runs `loop` in the background of the current scope for as long as the scope lives: a failure
 * or defect is logged with its cause and the loop starts again after `restart`; closing the
 * scope interrupts it. Every background loop of the service goes through here.
 *
 * The loop reports its rounds through `CurrentLoop` (its own `report` when others must wake it,
 * else one registered under `name`); sleeps on `restart` are reported here.
 *
 * The loop itself is not traced (a span per poll would bury the work in noise); the work it
 * does is, where it says so with `traced`.
 */
export const supervise = <E, R>(
  name: string,
  loop: Effect.Effect<unknown, E, R>,
  options: { readonly restart?: Schedule.Schedule<unknown, unknown>; readonly report?: LoopReport } = {}
) =>
  Effect.gen(function*() {
    const report = options.report ?? (yield* registerLoop(name))
    yield* loop.pipe(
      Effect.catchAllCause(logFailure(name)),
      Effect.repeat(reported(options.restart ?? restartAfter)),
      Effect.forever,
      Effect.provideService(CurrentLoop, report),
      Effect.withTracerEnabled(false),
      Effect.forkScoped
    )
  })

/** Work inside a background loop that is traced: a root span of its own, whatever the loop's setting. */
export const traced = (name: string) => <A, E, R>(work: Effect.Effect<A, E, R>) =>
  work.pipe(Effect.withSpan(name, { root: true }), Effect.withTracerEnabled(true))

/**
 * Runs `job` now and then on `schedule`, in the background of the current scope: a failed run
 * is logged with its cause and the next one comes on time. Each run is a span named `job <name>`
 * unless `untraced` (a job that runs every few milliseconds and traces its real work itself).
 */
export const periodically = <A, E, R>(
  name: string,
  job: Effect.Effect<A, E, R>,
  schedule: Schedule.Schedule<unknown, unknown>,
  options: { readonly untraced?: boolean } = {}
) =>
  supervise(
    name,
    (options.untraced === true ? job : traced(`job ${name}`)(job)).pipe(
      Effect.catchAllCause(logFailure(name)),
      Effect.repeat(reported(schedule))
    )
  )
