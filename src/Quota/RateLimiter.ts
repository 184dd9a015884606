import { Cause, Clock, Context, Effect, Layer, Metric } from "effect"
import { addAnswerHeaders } from "../Http/RequestId.js"
import { quotaRefusals } from "../Telemetry/Metrics.js"
import { KeyAdmission } from "../Auth/Authorization.js"
import type { ApiKeyContext } from "../Auth/CurrentKey.js"
import { RateLimited, type ServiceUnavailable } from "../Domain/Errors.js"
import { isPgPoolExhausted } from "../Sql/Busy.js"
import type { RateLimitHeaders } from "./AccountUsage.js"
import { type Admittee, type BatchingOptions, makeBatching, type NotStored } from "./Batching.js"
import { nextUtcMidnight } from "./Calendar.js"
import { storeBusy } from "./UsageRows.js"

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
   * Counts the request against its key creator's quota, or refuses it with 429. Adds the
   * `RateLimit-*` headers (and `Retry-After` on 429) to the answer to the HTTP request being
   * served (src/Http/RequestId.ts, `addAnswerHeaders`). Fails with 503 when the count cannot be
   * stored; the request then counts nowhere.
   */
  readonly admit: (key: ApiKeyContext) => Effect.Effect<void, RateLimited | ServiceUnavailable>
  /** The quota of the key's creator as it stands now: its stored day, month and burst-window counts. */
  readonly usage: (key: ApiKeyContext) => Effect.Effect<UsageReport, ServiceUnavailable>
  /**
   * The stored count of the UTC day holding `now` for the key's creator: what GET /usage shows of
   * the counters (api-v1 §2.9 reports no month or burst-window count). One indexed read, however
   * many requests the burst window holds.
   */
  readonly usedToday: (key: ApiKeyContext, now: number) => Effect.Effect<number, ServiceUnavailable>
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

/** How a limiter over the usage store keeps its counters. */
export interface LimiterOptions extends BatchingOptions {
  /** Whether answers get the `RateLimit-*` headers (and `Retry-After` on 429). */
  readonly answerHeaders: boolean
}

/**
 * Exact across every process on the database: each request is decided in the transaction of its
 * batch, which holds its account's counters locked, and its count is stored before it is answered
 * (src/Quota/Batching.ts). Over that, the policy: a request its counters allow goes on, one they
 * do not is refused with 429 and `Retry-After`; both report the counters in `RateLimit-*`. When the
 * store stays busy past its timeout, the requests of that transaction answer 503 and count nowhere.
 */
export const makeRateLimiterWith = (options: LimiterOptions) => Effect.gen(function*() {
  const batching = yield* makeBatching(options)

  const notStored = (failure: NotStored) => {
    // No pooled connection came free: answered as any statement that found none (src/Http/Server.ts).
    const squashed = Cause.squash(failure.cause)
    return Effect.zipRight(Metric.increment(refusedBusy), isPgPoolExhausted(squashed) ? Effect.die(squashed) : Effect.fail(storeBusy()))
  }

  // On every request's path: no span of its own, the request's span covers it.
  const admit = (key: Admittee): Effect.Effect<void, RateLimited | ServiceUnavailable> =>
    Effect.matchEffect(batching.decide(key), {
      onFailure: notStored,
      onSuccess: (decision) => {
        if (decision._tag === "Admitted") return options.answerHeaders ? addAnswerHeaders(headersOf(decision.headers)) : Effect.void
        const refused = Effect.zipRight(
          Metric.increment(refusedLimited),
          new RateLimited({
            message: `Request quota exhausted; retry in ${decision.retryAfterSeconds} s.`,
            retryAfterSeconds: decision.retryAfterSeconds
          })
        )
        return options.answerHeaders
          ? Effect.zipRight(addAnswerHeaders(headersOf(decision.headers, decision.retryAfterSeconds)), refused)
          : refused
      }
    })

  const usage = Effect.fnUntraced(function*(key: Admittee) {
    const now = yield* Clock.currentTimeMillis
    const counts = yield* batching.counts(key, now)
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

  return { admit, usage, usedToday: batching.today } as const
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
}
