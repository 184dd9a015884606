import type { QuotaPlan } from "../Auth/CurrentKey.js"
import { nextUtcMidnight, nextUtcMonthStart, secondsUntil, utcDay } from "./Calendar.js"

/** What `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` report (decisions §2). */
export interface RateLimitHeaders {
  readonly limit: number
  readonly remaining: number
  readonly resetSeconds: number
}

export type Decision =
  | { readonly _tag: "Admitted"; readonly headers: RateLimitHeaders }
  | { readonly _tag: "Limited"; readonly headers: RateLimitHeaders; readonly retryAfterSeconds: number }

/** The counts of one account as they stand in the store when it is first used. */
export interface StoredUsage {
  /** Requests of the current UTC day. */
  readonly dayCount: number
  /** Requests of the current UTC month. */
  readonly monthCount: number
  /** Instants (ms) of the requests still inside the burst window, oldest first. */
  readonly burst: ReadonlyArray<number>
}

export const burstWindowMs = (plan: QuotaPlan): number => plan.burstWindowMinutes * 60_000

/**
 * The live counters of one account: the requests inside the sliding burst window, and the
 * counts of the current UTC day and month. Every method runs synchronously, so a check and
 * its increment can never interleave with another request's.
 */
export class AccountUsage {
  private stamps: Array<number>
  private head = 0
  private dayCount: number
  private monthCount: number
  // Bounds of the current UTC day and month, so that most requests compare numbers only.
  private dayStartsAt: number
  private dayEndsAt: number
  private monthEndsAt: number

  /** `stored` holds the counts of the day and month holding `now`. */
  constructor(stored: StoredUsage, now: number) {
    this.stamps = [...stored.burst]
    this.dayCount = stored.dayCount
    this.monthCount = stored.monthCount
    this.dayStartsAt = Date.parse(`${utcDay(now)}T00:00:00.000Z`)
    this.dayEndsAt = nextUtcMidnight(now)
    this.monthEndsAt = nextUtcMonthStart(now)
  }

  /** The counts as they stand at `now`: burst window, UTC day, UTC month. */
  current(now: number, plan: QuotaPlan): { readonly inBurst: number; readonly today: number; readonly thisMonth: number } {
    this.advance(now, burstWindowMs(plan))
    return { inBurst: this.stamps.length - this.head, today: this.dayCount, thisMonth: this.monthCount }
  }

  /** Counts a request at `now` if every limit allows it; a refused request counts nowhere. */
  take(now: number, plan: QuotaPlan): Decision {
    const windowMs = burstWindowMs(plan)
    this.advance(now, windowMs)
    const inBurst = this.stamps.length - this.head
    const waits: Array<number> = []
    if (inBurst >= plan.burstLimit) {
      // The request that must leave the window before one more fits.
      const freeing = this.stamps[this.head + inBurst - plan.burstLimit]
      waits.push(freeing === undefined ? windowMs : freeing + windowMs - now)
    }
    if (this.dayCount >= plan.dailyLimit) waits.push(this.dayEndsAt - now)
    if (this.monthCount >= plan.monthlyLimit) waits.push(this.monthEndsAt - now)
    if (waits.length > 0) {
      return {
        _tag: "Limited",
        headers: this.headers(now, plan),
        retryAfterSeconds: Math.max(1, secondsUntil(0, Math.max(...waits)))
      }
    }
    this.stamps.push(now)
    this.dayCount += 1
    this.monthCount += 1
    return { _tag: "Admitted", headers: this.headers(now, plan) }
  }

  /** The limit with the least remaining; on a tie the one that frees up last. */
  headers(now: number, plan: QuotaPlan): RateLimitHeaders {
    const windowMs = burstWindowMs(plan)
    this.advance(now, windowMs)
    const inBurst = this.stamps.length - this.head
    const oldest = this.stamps[this.head]
    const burst: RateLimitHeaders = {
      limit: plan.burstLimit,
      remaining: plan.burstLimit - inBurst,
      resetSeconds: oldest === undefined ? 0 : Math.max(1, secondsUntil(now, oldest + windowMs))
    }
    const others: ReadonlyArray<RateLimitHeaders> = [
      {
        limit: plan.dailyLimit,
        remaining: plan.dailyLimit - this.dayCount,
        resetSeconds: secondsUntil(now, this.dayEndsAt)
      },
      {
        limit: plan.monthlyLimit,
        remaining: plan.monthlyLimit - this.monthCount,
        resetSeconds: secondsUntil(now, this.monthEndsAt)
      }
    ]
    let least = burst
    for (const c of others) {
      if (c.remaining < least.remaining || (c.remaining === least.remaining && c.resetSeconds > least.resetSeconds)) {
        least = c
      }
    }
    return { ...least, remaining: Math.max(0, least.remaining) }
  }

  /** Drops requests that left the burst window and starts a new day or month when one began. */
  private advance(now: number, windowMs: number): void {
    const cutoff = now - windowMs
    let oldest = this.stamps[this.head]
    while (oldest !== undefined && oldest <= cutoff) {
      this.head += 1
      oldest = this.stamps[this.head]
    }
    if (this.head > 256 && this.head * 2 > this.stamps.length) {
      this.stamps = this.stamps.slice(this.head)
      this.head = 0
    }
    if (now >= this.dayEndsAt || now < this.dayStartsAt) {
      const startOfDay = Date.parse(`${utcDay(now)}T00:00:00.000Z`)
      const monthEndsAt = nextUtcMonthStart(now)
      if (monthEndsAt !== this.monthEndsAt) this.monthCount = 0
      this.dayCount = 0
      this.dayStartsAt = startOfDay
      this.dayEndsAt = nextUtcMidnight(now)
      this.monthEndsAt = monthEndsAt
    }
  }
}
