import { Clock, Context, Duration, Effect, type Scope } from "effect"
import { JobLeases } from "./JobLeases.js"
import { type LoopRounds, parked } from "./LoopRounds.js"
import { supervise, traced } from "./Supervise.js"

/** How the service processes on one database share a job. */
export type JobLease =
  /** Once per period over all processes: the first to claim the period (`job_leases.next_run_at`) runs it. */
  | { readonly _tag: "PerPeriod"; readonly key: string; readonly period: Duration.Duration }
  /** One process at a time (`job_leases.holder`), renewing its lease; another takes over once it lapses. */
  | { readonly _tag: "Held"; readonly key: string }
  /** Each item the job works on is leased by the claim that takes it (a delivery, `deliveries.lease_until`). */
  | { readonly _tag: "PerItem"; readonly item: string }
  /** Every process for itself (a gauge of its own). */
  | { readonly _tag: "EachProcess" }

/** What one round did. */
export interface JobRound {
  /** Webhook delivery attempts it made, each recorded. */
  readonly deliveryAttempts: number
  /** When the job is next due after the round (Clock millis, after its time); null when only a write makes it due. */
  readonly nextDue: number | null
}

/**
 * One background job of the service (the list: src/BackgroundJobs.ts). The real clock runs its
 * rounds one after the other (`runJob`), a simulated clock runs the same rounds while it stands
 * and in due order when it is moved (src/TestClock/Advance.ts).
 */
export interface BackgroundJob {
  readonly name: string
  readonly lease: JobLease
  /** One round at the clock's present: what is due then, done to the end (what it started has finished and is recorded). */
  readonly round: Effect.Effect<JobRound, unknown>
  /** When the job is next due, from the clock and the database: at or before `now` when it is due now; null when nothing is coming. */
  readonly dueAt: (now: number) => Effect.Effect<number | null>
  /** The longest the loop rests between rounds: its poll for writes, or its period. */
  readonly every: Duration.Duration
  /**
   * A late round does what the rounds it missed would have done (a purge deletes by age): a walk
   * through time runs it at the instants it visits anyway, and need not stop at each of its due times.
   */
  readonly catchesUp: boolean
  /** Each round a span of its own (`job <name>`); off for a job polled every few milliseconds that traces its real work itself. */
  readonly traced: boolean
  /**
   * How the loop runs, when it is more than rounds one after the other (the delivery worker
   * overlaps its attempts and wakes as each one ends); supervised by the job itself.
   */
  readonly loop?: Effect.Effect<void, never, Scope.Scope | LoopRounds>
}

const nothingAttempted = (nextDue: number | null): JobRound => ({ deliveryAttempts: 0, nextDue })

/**
 * Keeps the background loops' rounds and a move of the simulated clock apart: a round runs with
 * the clock standing, and the clock moves only between rounds. Production lets every round through.
 */
export class RoundGate extends Context.Reference<RoundGate>()("Background/RoundGate", {
  defaultValue: (): {
    /** A loop's round: waits while the clock is being moved. */
    readonly round: <A, E, R>(round: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
    /** Runs `move` once no round is under way, holding back the loops' rounds until it is done. */
    readonly alone: <A, E, R>(move: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  } => ({ round: (round) => round, alone: (move) => move })
}) {
  /** A gate that holds rounds back while the clock moves (a simulated clock, v1-extensions §X5.1). */
  static readonly make = Effect.gen(function*() {
    const all = 1_000_000
    const permits = yield* Effect.makeSemaphore(all)
    // One move at a time: a second waits for the first to end, not for a gap between rounds.
    const moves = yield* Effect.makeSemaphore(1)
    // Closed while a move waits or runs: no new round starts, so the move cannot be starved.
    const open = yield* Effect.makeLatch(true)
    const gate: Context.Tag.Service<RoundGate> = {
      round: (round) => Effect.zipRight(open.await, permits.withPermits(1)(round)),
      alone: (move) =>
        moves.withPermits(1)(Effect.acquireUseRelease(open.close, () => permits.withPermits(all)(move), () => open.open))
    }
    return gate
  })
}

/** A job run once per period over all processes; it catches up (what it does depends on the time, not on the runs before). */
export const periodJob = (job: {
  readonly name: string
  readonly key: string
  readonly period: Duration.Duration
  readonly run: Effect.Effect<unknown, unknown>
}) =>
  Effect.map(JobLeases, (leases): BackgroundJob => ({
    name: job.name,
    lease: { _tag: "PerPeriod", key: job.key, period: job.period },
    every: job.period,
    catchesUp: true,
    traced: true,
    round: Effect.zipRight(
      leases.oncePerPeriod(job.key, Duration.toMillis(job.period), job.run),
      Effect.map(leases.nextPeriodAt(job.key), nothingAttempted)
    ),
    dueAt: () => leases.nextPeriodAt(job.key)
  }))

/**
 * A job that follows writes (due whenever `dueAt` says so), run by one process at a time: the one
 * holding its lease. Its lease is given up when the scope closes.
 */
export const heldJob = (job: {
  readonly name: string
  readonly key: string
  readonly every: Duration.Duration
  readonly run: Effect.Effect<unknown, unknown>
  readonly dueAt: (now: number) => Effect.Effect<number | null>
}) =>
  Effect.gen(function*() {
    const leases = yield* JobLeases
    const step = yield* leases.whileHeld(job.key, job.run)
    return {
      name: job.name,
      lease: { _tag: "Held", key: job.key },
      every: job.every,
      catchesUp: true,
      traced: false,
      round: Effect.as(step, nothingAttempted(null)),
      dueAt: job.dueAt
    } satisfies BackgroundJob
  })

/** A job every process runs for itself every `every` (a gauge); never due for a walk through time. */
export const processJob = (job: { readonly name: string; readonly every: Duration.Duration; readonly run: Effect.Effect<unknown, unknown> }): BackgroundJob => ({
  name: job.name,
  lease: { _tag: "EachProcess" },
  every: job.every,
  catchesUp: true,
  traced: false,
  round: Effect.as(job.run, nothingAttempted(null)),
  dueAt: () => Effect.succeed(null)
})

/**
 * Runs `job` in the background of the current scope on the process's clock: a round, then a rest
 * until the job is next due or for `every` at most, supervised (`supervise`: a failed round is
 * retried on its policy). Each round passes the `RoundGate`.
 */
export const runJob = (job: BackgroundJob) =>
  job.loop ?? Effect.gen(function*() {
    const gate = yield* RoundGate
    const every = Duration.toMillis(job.every)
    const round = gate.round(job.traced ? traced(`job ${job.name}`)(job.round) : job.round)
    yield* supervise(
      job.name,
      Effect.gen(function*() {
        const { nextDue } = yield* round
        const now = yield* Clock.currentTimeMillis
        const until = nextDue !== null && nextDue > now ? Math.min(nextDue, now + every) : now + every
        yield* parked(until)
        yield* Effect.sleep(Duration.millis(until - now))
      }).pipe(Effect.forever)
    )
  })

/** Runs every job of `jobs` in the background of the current scope (`runJob`). */
export const runJobs = (jobs: ReadonlyArray<BackgroundJob>) => Effect.forEach(jobs, runJob, { discard: true })
