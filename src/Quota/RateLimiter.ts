import { Cause, Clock, Context, Effect, Exit, Layer, Metric, Runtime } from "effect"
import { addAnswerHeaders } from "../Http/RequestId.js"
import { quotaRefusals } from "../Telemetry/Metrics.js"
import { KeyAdmission } from "../Auth/Authorization.js"
import type { ApiKeyContext } from "../Auth/CurrentKey.js"
import { RateLimited, ServiceUnavailable } from "../Domain/Errors.js"
import { isPgPoolExhausted } from "../Sql/Busy.js"
import { AccountUsage, burstWindowMs, type Decision, type RateLimitHeaders } from "./AccountUsage.js"
import { nextUtcMidnight, utcDay } from "./Calendar.js"
import { type BatchAccount, type CountedRequest, type Decider, type UsageCounts, UsageStore, UsageStoreMemory } from "./UsageStore.js"

/** The numbers of GET /usage (api-v1 §2.9). */
export interface UsageReport {
  readonly burstLimit: number
  readonly burstWindowMinutes: number
  readonly dailyLimit: number
  readonly usedToday: number
  readonly remainingToday: number
  readonly monthlyLimit: number
  readonly usedThisMonth: number
  readonly usedInBurstWindow: number
  /** The next UTC midnight, in ms. */
  readonly resetAt: number
}

export interface RateLimiterShape {
  /**
   * Counts the request against its key creator's quota, or refuses it with 429. Sets the
   * `RateLimit-*` headers (and `Retry-After` on 429) on the answer to the HTTP request being
   * served (src/Http/RequestId.ts, `addAnswerHeaders`). Fails with 503 when the count cannot be
   * stored; the request then counts nowhere.
   */
  readonly admit: (key: ApiKeyContext) => Effect.Effect<void, RateLimited | ServiceUnavailable>
  /** The quota of the key's creator as it stands now. */
  readonly usage: (key: ApiKeyContext) => Effect.Effect<UsageReport, ServiceUnavailable>
}

const headersOf = (headers: RateLimitHeaders, retryAfterSeconds?: number): Record<string, string> => {
  const set: Record<string, string> = {
    "ratelimit-limit": String(headers.limit),
    "ratelimit-remaining": String(headers.remaining),
    "ratelimit-reset": String(headers.resetSeconds)
  }
  if (retryAfterSeconds !== undefined) set["retry-after"] = String(retryAfterSeconds)
  return set
}

const refusedLimited = Metric.tagged(quotaRefusals, "reason", "rate_limited")
const refusedBusy = Metric.tagged(quotaRefusals, "reason", "service_unavailable")

/** What the limiter counts a request against: a counter's id and its limits. */
export type Admittee = Pick<ApiKeyContext, "accountId" | "quota">

/** How a limiter over the usage store keeps its counters. */
export interface LimiterOptions {
  /** Whether answers get the `RateLimit-*` headers (and `Retry-After` on 429). */
  readonly answerHeaders: boolean
  /** Requests are counted at the start of their step (ms): the stored stamps per counter and window stay few. */
  readonly stepMs: number
  /** At most this many counters stay in memory; the oldest are read again from the store when next used. */
  readonly maxKnown: number
}

/** A request waiting for its batch's decision. */
interface Waiting {
  readonly key: Admittee
  readonly resume: (answer: Effect.Effect<void, RateLimited | ServiceUnavailable>) => void
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

const busy = () => new ServiceUnavailable({ message: "The service is busy; nothing changed and the request may be retried." })

/**
 * Exact across every process on the database. A request is decided inside a transaction that
 * holds the account's day row locked (on SQLite, the quota file's write lock), so no other
 * process decides for the account meanwhile, and its count is stored before it is answered.
 * Requests that arrive before a transaction starts (while the one before runs, or until the
 * event loop has run the callbacks of the I/O it already received) are decided together in
 * it, in arrival order: under load one transaction serves many requests.
 *
 * A request's fiber only suspends until its batch is decided (one `Effect.async`): the batch is
 * started from the event loop (`setImmediate`: by then the requests that came in with the same
 * poll have reached the limiter; a turn of the fiber scheduler is not enough, it runs before the
 * server is handed the next request) and runs as one fiber of its own, which sets each request's
 * `RateLimit-*` headers on its answer and resumes it: to go on, or with its 429 or 503.
 *
 * The counters of an account stay in memory between transactions. The locked day row tells
 * whether they are still exact: every admitted request adds to it, so when its count is the
 * one this process last stored, no other process admitted a request for the account since,
 * and the burst window held in memory is the stored one. Otherwise (another process counted,
 * a new UTC day, a failed transaction) the counters are read again from the store first.
 *
 * When the store stays busy past its timeout, the requests of that transaction answer 503 and
 * count nowhere.
 */
export const makeRateLimiterWith = (options: LimiterOptions) => Effect.gen(function*() {
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
          // The counters in memory may hold decisions that were never stored.
          for (const { key } of batch.waiting) known.delete(key.accountId)
          // No pooled connection came free: answered as any statement that found none (src/Http/Server.ts).
          const squashed = Cause.squash(outcome.cause)
          const refused = isPgPoolExhausted(squashed) ? Effect.die(squashed) : Effect.fail(busy())
          for (const { resume } of batch.waiting) resume(refused)
          return Effect.zipRight(
            Metric.incrementBy(refusedBusy, batch.waiting.length),
            Effect.logWarning("request counts not stored", outcome.cause)
          )
        }
        for (const [accountId, usage] of outcome.value.synced) known.set(accountId, { usage, day: utcDay(now) })
        for (const accountId of known.keys()) {
          if (known.size <= options.maxKnown) break
          known.delete(accountId)
        }
        const { decisions } = outcome.value
        let limited = 0
        batch.waiting.forEach(({ resume }, i) => {
          const decision = decisions[i]
          if (decision === undefined) return resume(Effect.dieMessage("a batch answered fewer decisions than requests"))
          if (decision._tag === "Admitted") {
            return resume(options.answerHeaders ? addAnswerHeaders(headersOf(decision.headers)) : Effect.void)
          }
          limited += 1
          const refused = new RateLimited({
            message: `Request quota exhausted; retry in ${decision.retryAfterSeconds} s.`,
            retryAfterSeconds: decision.retryAfterSeconds
          })
          resume(
            options.answerHeaders
              ? Effect.zipRight(addAnswerHeaders(headersOf(decision.headers, decision.retryAfterSeconds)), refused)
              : refused
          )
        })
        return limited === 0 ? Effect.void : Metric.incrementBy(refusedLimited, limited)
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

  // On every request's path: no span of its own, the request's span covers it. The request that
  // opens a batch schedules it; every request waits for its batch's decision, and its answer
  // headers are added by its own fiber when it resumes (`addAnswerHeaders`).
  const admit = (key: Admittee): Effect.Effect<void, RateLimited | ServiceUnavailable> =>
    Effect.async<void, RateLimited | ServiceUnavailable>((resume) => {
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
  const usage = Effect.fnUntraced(function*(key: Admittee) {
    const now = yield* Clock.currentTimeMillis
    const windowMs = burstWindowMs(key.quota)
    const cached = known.get(key.accountId)
    let counts: UsageCounts | undefined
    if (cached !== undefined && cached.day === utcDay(now) && settling === 0) {
      const held = cached.usage.current(now, key.quota)
      const stored = yield* store.dayCount(key.accountId, now)
      if (stored === held.today && settling === 0) counts = held
    }
    if (counts === undefined) counts = yield* store.counts(key.accountId, now, windowMs)
    return {
      burstLimit: key.quota.burstLimit,
      burstWindowMinutes: key.quota.burstWindowMinutes,
      dailyLimit: key.quota.dailyLimit,
      usedToday: counts.today,
      remainingToday: Math.max(0, key.quota.dailyLimit - counts.today),
      monthlyLimit: key.quota.monthlyLimit,
      usedThisMonth: counts.thisMonth,
      usedInBurstWindow: counts.inBurst,
      resetAt: nextUtcMidnight(now)
    } satisfies UsageReport
  })

  return { admit, usage } as const
})

/** The request quota's limiter: exact to the millisecond, every account's counters kept in memory. */
export const makeRateLimiter = Effect.map(
  makeRateLimiterWith({ answerHeaders: true, stepMs: 1, maxKnown: Number.POSITIVE_INFINITY }),
  (limiter) => RateLimiter.of(limiter)
)

/** The request quota of decisions §3, per creator account. */
export class RateLimiter extends Context.Tag("Quota/RateLimiter")<RateLimiter, RateLimiterShape>() {
  /** The limiter over the `UsageStore` at hand, also admitting requests for the auth middleware. */
  static readonly layer = Layer.scoped(RateLimiter, makeRateLimiter).pipe(
    Layer.flatMap((context) =>
      Layer.succeedContext(Context.add(context, KeyAdmission, KeyAdmission.of({ admit: Context.get(context, RateLimiter).admit })))
    )
  )
  /** The same limiter over counters in memory: for tests that move the clock without a database. */
  static readonly layerMemory = RateLimiter.layer.pipe(Layer.provide(UsageStoreMemory))
}
