/**
 * The request batching of a limiter over the `UsageStore`. What holds, whatever the policy:
 *
 * - A batch holds the requests that arrived while it was open, in arrival order: it opens with the
 *   first request after the previous batch closed, and closes when it starts, on the event-loop
 *   turn after that request (`setImmediate`: by then the requests that came in with the same poll
 *   have reached the limiter; a turn of the fiber scheduler is not enough, it runs before the
 *   server is handed the next request), or later, once the batch before it is stored.
 * - At most one batch of a process is being stored at a time, as one transaction of the store, run
 *   by a fiber of its own. Its requests are decided inside it, in arrival order, while the store
 *   holds each of the batch's counters locked; the store locks them in one order, sorted by
 *   counter id, in every process (src/Quota/PgUsageStore.ts, test/QuotaLockOrder.test.ts), so two
 *   batches holding the same counters never deadlock. The requests it admitted are stored before
 *   the transaction commits.
 * - A waiting request is answered once its batch's transaction has ended: with its decision once
 *   committed, or with the transaction's failure. A request's fiber only suspends meanwhile (one
 *   `Effect.async`), and goes on in its own fiber.
 * - The counters of an account stay in memory between transactions. The locked day row tells
 *   whether they are still exact: every admitted request adds to it, so when its count is the one
 *   this process last stored, no other process admitted a request for the account since, and the
 *   burst window held in memory is the stored one. Otherwise (another process counted, a new UTC
 *   day) they are read again from the store first.
 * - When the store fails (busy past its timeout, the database lost), nothing of the batch was
 *   written: every request of the batch is answered with the failure and counts nowhere, and the
 *   counters in memory of its accounts are forgotten (they may hold decisions never stored).
 */
import { type Cause, Data, Effect, Exit, Runtime } from "effect"
import type { QuotaPlan } from "../Auth/CurrentKey.js"
import type { ServiceUnavailable } from "../Domain/Errors.js"
import { AccountUsage, burstWindowMs, type Decision } from "./AccountUsage.js"
import { utcDay } from "./Calendar.js"
import { type BatchAccount, type CountedRequest, type Decider, type UsageCounts, UsageStore } from "./UsageStore.js"

/** What a request is counted against: a counter's id and its limits. */
export interface Admittee {
  readonly accountId: string
  readonly quota: QuotaPlan
}

/** A batch whose transaction failed: nothing of it was written. `cause` is the store's failure. */
export class NotStored extends Data.TaggedError("NotStored")<{ readonly cause: Cause.Cause<ServiceUnavailable> }> {}

/** How the batching keeps its counters. */
export interface BatchingOptions {
  /** Requests are counted at the start of their step (ms): the stored stamps per counter and window stay few. */
  readonly stepMs: number
  /** At most this many counters stay in memory; the oldest are read again from the store when next used. */
  readonly maxKnown: number
}

/** A request waiting for its batch's decision. */
interface Waiting {
  readonly key: Admittee
  readonly resume: (answer: Effect.Effect<Decision, NotStored>) => void
}

/** Requests decided together in one transaction, in arrival order. */
interface Batch {
  readonly waiting: Array<Waiting>
  /** Its event-loop turn came: it starts once the batch before it is stored. */
  due: boolean
}

/** The counters of an account as this process last saw them in the store. */
interface Known {
  readonly usage: AccountUsage
  /** The UTC day they were read from the store. */
  readonly day: string
}

export const makeBatching = (options: BatchingOptions) => Effect.gen(function*() {
  const store = yield* UsageStore
  const runtime = yield* Effect.runtime<never>()
  const clock = yield* Effect.clock
  const known = new Map<string, Known>()
  // The batch still taking requests: the next transaction's.
  let open: Batch | undefined
  // Batches being stored (0 or 1): meanwhile the counters in memory may hold decisions not yet stored.
  let settling = 0

  /** Decides `batch` in one transaction of the store; answers each request's decision and the counters used. */
  const decideAll = (batch: ReadonlyArray<Admittee>, now: number) => {
    const day = utcDay(now)
    const decisions: Array<Decision> = []
    const synced = new Map<string, AccountUsage>()
    const accounts = new Map<string, BatchAccount>()
    for (const key of batch) accounts.set(key.accountId, { accountId: key.accountId, windowMs: burstWindowMs(key.quota) })
    const plans = new Map(batch.map((key) => [key.accountId, key.quota]))
    // Once `decide` has run, the counters in memory hold its decisions: should the store try the
    // transaction again, they are read back from it instead.
    let decided = false
    const decider: Decider = {
      current: (accountId, dayCount) => {
        if (decided) return false
        const cached = known.get(accountId)
        const plan = plans.get(accountId)
        return cached !== undefined && plan !== undefined && cached.day === day &&
          cached.usage.current(now, plan).today === dayCount
      },
      decide: (reloaded) => {
        decided = true
        decisions.length = 0
        synced.clear()
        const admitted: Array<CountedRequest> = []
        for (const key of batch) {
          let usage = synced.get(key.accountId)
          if (usage === undefined) {
            const fresh = reloaded.get(key.accountId)
            // A counter that was not reloaded is current (a failed transaction forgets it below).
            usage = fresh !== undefined ? new AccountUsage(fresh, now) : known.get(key.accountId)?.usage
            if (usage === undefined) throw new Error(`counters of ${key.accountId} neither current nor loaded`)
            synced.set(key.accountId, usage)
          }
          const decision = usage.take(now, key.quota)
          if (decision._tag === "Admitted") admitted.push({ accountId: key.accountId, at: now, windowMs: burstWindowMs(key.quota) })
          decisions.push(decision)
        }
        return admitted
      }
    }
    return Effect.as(store.settle(now, [...accounts.values()], decider), { decisions, synced })
  }

  /** Stores `batch` and answers its requests; then starts the next batch if its turn came meanwhile. */
  const settle = (batch: Batch) =>
    Effect.suspend(() => {
      if (open === batch) open = undefined
      settling += 1
      const now = stepOf(clock.unsafeCurrentTimeMillis())
      return Effect.flatMap(Effect.exit(decideAll(batch.waiting.map((w) => w.key), now)), (outcome) => {
        settling -= 1
        if (Exit.isFailure(outcome)) {
          for (const { key } of batch.waiting) known.delete(key.accountId)
          const failed = Effect.fail(new NotStored({ cause: outcome.cause }))
          for (const { resume } of batch.waiting) resume(failed)
          return Effect.logWarning("request counts not stored", outcome.cause)
        }
        for (const [accountId, usage] of outcome.value.synced) known.set(accountId, { usage, day: utcDay(now) })
        for (const accountId of known.keys()) {
          if (known.size <= options.maxKnown) break
          known.delete(accountId)
        }
        const { decisions } = outcome.value
        batch.waiting.forEach(({ resume }, i) => {
          const decision = decisions[i]
          resume(decision === undefined ? Effect.dieMessage("a batch answered fewer decisions than requests") : Effect.succeed(decision))
        })
        return Effect.void
      })
    }).pipe(Effect.ensuring(Effect.sync(() => {
      if (open !== undefined && open.due) start(open)
    })))

  const stepOf = (now: number) => options.stepMs <= 1 ? now : now - (now % options.stepMs)

  const start = (batch: Batch) => {
    Runtime.runFork(runtime)(settle(batch))
  }

  /** The batch's event-loop turn: it starts now, or once the batch being stored is done. */
  const due = (batch: Batch) => {
    batch.due = true
    if (settling === 0) start(batch)
  }

  /**
   * The decision on one request, in the batch it joins: answered once the batch's transaction has
   * ended. Fails with `NotStored` when the batch could not be stored.
   */
  const decide = (key: Admittee): Effect.Effect<Decision, NotStored> =>
    Effect.async<Decision, NotStored>((resume) => {
      let batch = open
      if (batch === undefined) {
        const opened: Batch = { waiting: [], due: false }
        setImmediate(() => due(opened))
        open = batch = opened
      }
      batch.waiting.push({ key, resume })
    })

  /**
   * The counts as stored now. When the account's counters in memory are current (the stored day
   * count is the one this process last stored, and no batch of this process is being stored),
   * they are the stored ones, burst window included, and one indexed read confirms it; otherwise
   * the counts are read from the store.
   */
  const counts = Effect.fnUntraced(function*(key: Admittee, now: number) {
    const cached = known.get(key.accountId)
    if (cached !== undefined && cached.day === utcDay(now) && settling === 0) {
      const held = cached.usage.current(now, key.quota)
      const stored = yield* store.dayCount(key.accountId, now)
      if (stored === held.today && settling === 0) return held satisfies UsageCounts
    }
    return yield* store.counts(key.accountId, now, burstWindowMs(key.quota))
  })

  /**
   * The stored count of the UTC day holding `now`: every request this process answered was
   * stored before it was answered, and so was every other process's, so the stored count is
   * exact. Nothing in memory is consulted.
   */
  const today = (key: Admittee, now: number) => store.dayCount(key.accountId, now)

  return { decide, counts, today } as const
})
