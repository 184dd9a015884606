import { Cause, Effect, Schedule } from "effect"

/** How long a failed background loop waits before it starts again. */
export const restartAfter = Schedule.spaced("1 second")

const logFailure = (name: string) => (cause: Cause.Cause<unknown>) =>
  Cause.isInterruptedOnly(cause) ? Effect.failCause(cause) : Effect.logError(`${name} failed; restarting`, cause)

/**
 * Runs `loop` in the background of the current scope for as long as the scope lives: a failure
 * or defect is logged with its cause and the loop starts again after `restart`; closing the
 * scope interrupts it. Every background loop of the service goes through here.
 *
 * The loop itself is not traced (a span per poll would bury the work in noise); the work it
 * does is, where it says so with `traced`.
 */
export const supervise = <E, R>(
  name: string,
  loop: Effect.Effect<unknown, E, R>,
  restart: Schedule.Schedule<unknown, unknown> = restartAfter
) =>
  loop.pipe(
    Effect.catchAllCause(logFailure(name)),
    Effect.repeat(restart),
    Effect.forever,
    Effect.withTracerEnabled(false),
    Effect.forkScoped,
    Effect.asVoid
  )

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
      Effect.repeat(schedule)
    )
  )
