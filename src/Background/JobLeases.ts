import { Cause, Clock, Context, Effect } from "effect"
import { randomBytes } from "node:crypto"
import { hostname } from "node:os"
import { AppConfig, DEFAULT_LEASE_MILLIS } from "../Config.js"
import { JobLeaseStore } from "./JobLeaseStore.js"

/** This process among the service processes sharing one database: the name its leases carry. */
export class Instance extends Context.Reference<Instance>()("Background/Instance", {
  defaultValue: () => ({ id: `${hostname()}:${process.pid}:${randomBytes(6).toString("hex")}` })
}) {}

/**
 * Gives up a lease on the way out (a stop, an interrupted attempt). A lease that cannot be given up
 * because the database is gone lapses by itself within its lease time, so the failure is logged
 * and the stop goes on: it must not turn a clean stop into a crash.
 */
export const releaseOrLapse = (what: string) => <E, R>(release: Effect.Effect<void, E, R>): Effect.Effect<void, never, R> =>
  Effect.catchAllCause(release, (cause) =>
    Cause.isInterruptedOnly(cause)
      ? Effect.void
      : Effect.logWarning(`${what} not given up; it lapses by itself`, Cause.squash(cause)))

/** The lease of deliveries and jobs for these settings. */
export const leaseMillisOf = (config: { readonly workerLeaseMillis?: number | undefined }): number =>
  config.workerLeaseMillis ?? DEFAULT_LEASE_MILLIS

/**
 * Background jobs shared by every process on the database (`job_leases`, migration 0012): a
 * periodic job runs once per period whichever process gets there first, and a continuous job
 * runs in one process at a time, taken over by another when its holder stops renewing.
 */
export class JobLeases extends Effect.Service<JobLeases>()("Background/JobLeases", {
  effect: Effect.gen(function*() {
    const store = yield* JobLeaseStore
    const instance = yield* Instance
    const leaseMillis = leaseMillisOf(yield* AppConfig)

    /** True for the one process that claims the current period of `name`; the next period starts `periodMillis` later. */
    const claimPeriod = Effect.fn("JobLeases.claimPeriod")(function*(name: string, periodMillis: number) {
      const now = yield* Clock.currentTimeMillis
      return yield* store.claimPeriod(name, instance.id, now, now + periodMillis)
    })

    /** Takes or renews the lease of `name` for this process; false while another process holds it. */
    const hold = Effect.fn("JobLeases.hold")(function*(name: string) {
      const now = yield* Clock.currentTimeMillis
      return yield* store.hold(name, instance.id, now, now + leaseMillis)
    })

    /** Gives up this process's lease of `name`, so that another may take the job at once. */
    const release = (name: string) => store.release(name, instance.id).pipe(Effect.withSpan("JobLeases.release"))

    /**
     * `job` if this process claims the current period of `name`, else nothing: each period's run
     * happens in one process however many run the same schedule.
     */
    const oncePerPeriod = <A, E, R>(name: string, periodMillis: number, job: Effect.Effect<A, E, R>) =>
      Effect.flatMap(claimPeriod(name, periodMillis), (claimed) => claimed ? Effect.asVoid(job) : Effect.void)

    /**
     * `step` while this process holds the lease of `name`, renewing it at most every half lease;
     * nothing while another holds it (the lease is asked for again after a quarter lease). The
     * lease is given up when the scope closes.
     */
    const whileHeld = <A, E, R>(name: string, step: Effect.Effect<A, E, R>) =>
      Effect.gen(function*() {
        let heldUntil = 0
        let askAgainAt = 0
        yield* Effect.addFinalizer(() => heldUntil > 0 ? releaseOrLapse(`lease of ${name}`)(release(name)) : Effect.void)
        return Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          if (now >= askAgainAt) {
            const held = yield* hold(name)
            heldUntil = held ? now + leaseMillis : 0
            askAgainAt = held ? now + leaseMillis / 2 : now + leaseMillis / 4
          }
          if (now < heldUntil) yield* step
        })
      })

    /** When the next period of `name` starts, whichever process claims it (0 for a job that never ran). */
    const nextPeriodAt = (name: string) => store.nextRunAt(name).pipe(Effect.withSpan("JobLeases.nextPeriodAt"))

    return { claimPeriod, hold, release, oncePerPeriod, whileHeld, nextPeriodAt, leaseMillis, instance: instance.id } as const
  }),
  dependencies: [JobLeaseStore.Default]
}) {}
