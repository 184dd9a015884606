import { HttpApp, HttpServerResponse } from "@effect/platform"
import { Chunk, Clock, Context, Deferred, Effect, Exit, FiberId, Layer, Metric, Queue } from "effect"
import { supervise } from "../Background/Supervise.js"
import { quotaRefusals } from "../Telemetry/Metrics.js"
import { KeyAdmission } from "../Auth/Authorization.js"
import type { ApiKeyContext } from "../Auth/CurrentKey.js"
import { RateLimited, ServiceUnavailable } from "../Domain/Errors.js"
import { AccountUsage, burstWindowMs, type Decision, type RateLimitHeaders } from "./AccountUsage.js"
import { nextUtcMidnight, utcDay } from "./Calendar.js"
import { type BatchAccount, type CountedRequest, type Decider, UsageStore, UsageStoreMemory } from "./UsageStore.js"

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
   * `RateLimit-*` headers (and `Retry-After` on 429) on the answer. Fails with 503 when
   * the count cannot be stored; the request then counts nowhere.
   */
  readonly admit: (key: ApiKeyContext) => Effect.Effect<void, RateLimited | ServiceUnavailable>
  /** The quota of the key's creator as it stands now. */
  readonly usage: (key: ApiKeyContext) => Effect.Effect<UsageReport, ServiceUnavailable>
}

const withHeaders = (headers: RateLimitHeaders, retryAfterSeconds?: number) =>
  HttpApp.appendPreResponseHandler((_request, response) => {
    const limited = HttpServerResponse.setHeaders(response, {
      "ratelimit-limit": String(headers.limit),
      "ratelimit-remaining": String(headers.remaining),
      "ratelimit-reset": String(headers.resetSeconds)
    })
    return Effect.succeed(
      retryAfterSeconds === undefined
        ? limited
        : HttpServerResponse.setHeader(limited, "retry-after", String(retryAfterSeconds))
    )
  })

const refusedLimited = Metric.tagged(quotaRefusals, "reason", "rate_limited")
const refusedBusy = Metric.tagged(quotaRefusals, "reason", "service_unavailable")

/** A request waiting for its decision. */
interface Waiting {
  readonly key: ApiKeyContext
  readonly decided: Deferred.Deferred<Decision, ServiceUnavailable>
}

/** The counters of an account as this process last saw them in the store. */
interface Known {
  readonly usage: AccountUsage
  /** The UTC day they were read from the store. */
  readonly day: string
}

/** Requests decided together in one transaction, at most. */
const BATCH = 512

const busy = () => new ServiceUnavailable({ message: "The service is busy; nothing changed and the request may be retried." })

/**
 * Exact across every process on the database. A request is decided inside a transaction that
 * holds the account's day row locked (on SQLite, the database's write lock), so no other
 * process decides for the account meanwhile, and its count is stored before it is answered.
 * Requests that arrive while a transaction runs are decided together in the next one, in
 * arrival order: under load one transaction serves many requests.
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
export const makeRateLimiter = Effect.gen(function*() {
  const store = yield* UsageStore
  const known = new Map<string, Known>()
  const queue = yield* Queue.unbounded<Waiting>()

  /** Decides `batch` in one transaction of the store; answers each request's decision and the counters used. */
  const decideAll = (batch: ReadonlyArray<Waiting>, now: number) => {
    const day = utcDay(now)
    const decisions: Array<Decision> = []
    const synced = new Map<string, AccountUsage>()
    const accounts = new Map<string, BatchAccount>()
    for (const { key } of batch) accounts.set(key.accountId, { accountId: key.accountId, windowMs: burstWindowMs(key.quota) })
    const plans = new Map(batch.map(({ key }) => [key.accountId, key.quota]))
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
        for (const { key } of batch) {
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

  // One transaction at a time, for every request waiting when it starts.
  yield* supervise(
    "request quota",
    Effect.gen(function*() {
      const batch = Chunk.toReadonlyArray(yield* Queue.takeBetween(queue, 1, BATCH))
      const now = yield* Clock.currentTimeMillis
      const outcome = yield* Effect.exit(decideAll(batch, now))
      if (Exit.isSuccess(outcome)) {
        for (const [accountId, usage] of outcome.value.synced) known.set(accountId, { usage, day: utcDay(now) })
        outcome.value.decisions.forEach((decision, i) => {
          const waiting = batch[i]
          if (waiting !== undefined) Deferred.unsafeDone(waiting.decided, Exit.succeed(decision))
        })
      } else {
        // The counters in memory may hold decisions that were never stored.
        for (const { key } of batch) known.delete(key.accountId)
        if (!Exit.isInterrupted(outcome)) yield* Effect.logWarning("request counts not stored", outcome.cause)
        for (const { decided } of batch) Deferred.unsafeDone(decided, Exit.fail(busy()))
      }
    }).pipe(Effect.forever)
  )
  // Requests still waiting when the limiter stops are not admitted.
  yield* Effect.addFinalizer(() =>
    Effect.flatMap(Queue.takeAll(queue), (left) =>
      Effect.sync(() => Chunk.forEach(left, ({ decided }) => Deferred.unsafeDone(decided, Exit.fail(busy())))))
  )

  // On every request's path: no span of its own, the request's span covers it.
  const admit = (key: ApiKeyContext): Effect.Effect<void, RateLimited | ServiceUnavailable> =>
    Effect.suspend(() => {
      const decided = Deferred.unsafeMake<Decision, ServiceUnavailable>(FiberId.none)
      return Effect.zipRight(Queue.offer(queue, { key, decided }), Deferred.await(decided))
    }).pipe(
      Effect.tapError(() => Metric.increment(refusedBusy)),
      Effect.flatMap((decision): Effect.Effect<void, RateLimited> =>
        decision._tag === "Limited"
          ? Effect.zipRight(
            Effect.zipRight(Metric.increment(refusedLimited), withHeaders(decision.headers, decision.retryAfterSeconds)),
            new RateLimited({
              message: `Request quota exhausted; retry in ${decision.retryAfterSeconds} s.`,
              retryAfterSeconds: decision.retryAfterSeconds
            })
          )
          : withHeaders(decision.headers)
      )
    )

  const usage = Effect.fnUntraced(function*(key: ApiKeyContext) {
    const now = yield* Clock.currentTimeMillis
    const stored = yield* store.load(key.accountId, now, burstWindowMs(key.quota))
    const counts = new AccountUsage(stored, now).current(now, key.quota)
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

  return RateLimiter.of({ admit, usage })
})

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
