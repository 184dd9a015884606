import { HttpApp, HttpServerResponse } from "@effect/platform"
import { Clock, Context, Deferred, Duration, Effect, Exit, FiberId, Layer } from "effect"
import { supervise } from "../Background/Supervise.js"
import { KeyAdmission } from "../Auth/Authorization.js"
import type { ApiKeyContext, QuotaPlan } from "../Auth/CurrentKey.js"
import { RateLimited, ServiceUnavailable } from "../Domain/Errors.js"
import { AccountUsage, burstWindowMs, type RateLimitHeaders } from "./AccountUsage.js"
import { nextUtcMidnight } from "./Calendar.js"
import { type CountedRequest, UsageStore, UsageStoreMemory } from "./UsageStore.js"

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

/** How often counted requests are written to the store: a crash loses at most this much. */
export const FLUSH_EVERY = Duration.millis(500)

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

/**
 * Counts every request in memory, where a check and its increment cannot interleave, so the
 * limits hold exactly under concurrency. Counted requests are written behind, every
 * `FLUSH_EVERY` and at shutdown, so a crash loses at most that much. When a write fails
 * (the database stayed busy past its timeout), no request is admitted until a later write,
 * retried every `FLUSH_EVERY`, has stored the counts still waiting: meanwhile requests answer
 * 503 at once and count nowhere.
 * The memory holds the accounts seen since start, each loaded once from the store.
 */
export const makeRateLimiter = Effect.gen(function*() {
  const store = yield* UsageStore
  const accounts = new Map<string, AccountUsage>()
  const loading = new Map<string, Deferred.Deferred<AccountUsage, ServiceUnavailable>>()
  let unwritten: Array<CountedRequest> = []
  let behind = false

  /** Writes what is counted and not yet stored; on failure keeps it for the next attempt. */
  const flush: Effect.Effect<void, ServiceUnavailable> = Effect.suspend(() => {
    if (unwritten.length === 0) return Effect.void
    const batch = unwritten
    unwritten = []
    return Clock.currentTimeMillis.pipe(
      Effect.flatMap((now) => store.record(batch, now)),
      Effect.onExit((exit) =>
        Effect.sync(() => {
          if (Exit.isSuccess(exit)) {
            behind = false
          } else {
            unwritten = batch.concat(unwritten)
            behind = true
          }
        })
      ),
      Effect.uninterruptible,
      Effect.withSpan("RateLimiter.flush")
    )
  })

  // Opened by the first count after a write; the writer sleeps only while something waits.
  const waiting = yield* Effect.makeLatch(false)
  yield* supervise(
    "request count writer",
    Effect.gen(function*() {
      yield* waiting.await
      yield* Effect.sleep(FLUSH_EVERY)
      waiting.unsafeClose()
      yield* flush.pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("request counts not written yet; retrying", cause))
      )
      if (unwritten.length > 0) waiting.unsafeOpen()
    }).pipe(Effect.forever)
  )
  yield* Effect.addFinalizer(() => Effect.ignoreLogged(flush))

  const accountOf = (accountId: string, plan: QuotaPlan): Effect.Effect<AccountUsage, ServiceUnavailable> =>
    Effect.suspend(() => {
      const ready = accounts.get(accountId)
      if (ready !== undefined) return Effect.succeed(ready)
      const inFlight = loading.get(accountId)
      if (inFlight !== undefined) return Deferred.await(inFlight)
      const deferred = Deferred.unsafeMake<AccountUsage, ServiceUnavailable>(FiberId.none)
      loading.set(accountId, deferred)
      return Clock.currentTimeMillis.pipe(
        Effect.flatMap((now) => Effect.map(store.load(accountId, now, burstWindowMs(plan)), (stored) => ({ now, stored }))),
        Effect.map(({ now, stored }) => new AccountUsage(stored, now)),
        Effect.onExit((exit) =>
          Effect.sync(() => {
            loading.delete(accountId)
            if (Exit.isSuccess(exit)) accounts.set(accountId, exit.value)
            Deferred.unsafeDone(deferred, exit)
          })
        ),
        Effect.uninterruptible
      )
    })

  // While counts wait for a store that refused them, admitting more would widen what a crash loses.
  const catchUp = Effect.suspend(() =>
    behind
      ? Effect.fail(
        new ServiceUnavailable({ message: "The service is busy; nothing changed and the request may be retried." })
      )
      : Effect.void
  )

  // On every request's path: no span of its own, the request's span covers it.
  const admit = (key: ApiKeyContext): Effect.Effect<void, RateLimited | ServiceUnavailable> =>
    Effect.flatMap(Effect.zipRight(catchUp, accountOf(key.accountId, key.quota)), (usage) =>
      Effect.flatMap(Clock.currentTimeMillis, (now): Effect.Effect<void, RateLimited | ServiceUnavailable> => {
        const decision = usage.take(now, key.quota)
        if (decision._tag === "Limited") {
          return Effect.zipRight(
            withHeaders(decision.headers, decision.retryAfterSeconds),
            new RateLimited({
              message: `Request quota exhausted; retry in ${decision.retryAfterSeconds} s.`,
              retryAfterSeconds: decision.retryAfterSeconds
            })
          )
        }
        if (unwritten.push({ accountId: key.accountId, at: now, windowMs: burstWindowMs(key.quota) }) === 1) {
          waiting.unsafeOpen()
        }
        return withHeaders(decision.headers)
      }))

  const usage = Effect.fnUntraced(function*(key: ApiKeyContext) {
    const account = yield* accountOf(key.accountId, key.quota)
    const now = yield* Clock.currentTimeMillis
    const counts = account.current(now, key.quota)
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
