import { Effect, Layer } from "effect"
import type { StoredUsage } from "../../src/Quota/AccountUsage.js"
import { utcDay, utcMonth } from "../../src/Quota/Calendar.js"
import { RateLimiter } from "../../src/Quota/RateLimiter.js"
import { UsageStore, type UsageStoreShape } from "../../src/Quota/UsageStore.js"

/** Counters in process memory, for tests that need no database; lost when the process ends. */
export const makeMemoryUsageStore = (): UsageStoreShape => {
  const daily = new Map<string, number>()
  const burst = new Map<string, Array<number>>()
  const loadNow = (accountId: string, now: number, windowMs: number): StoredUsage => {
    const day = utcDay(now)
    const month = utcMonth(now)
    let monthCount = 0
    for (const [key, count] of daily) {
      if (key.startsWith(`${accountId}\u0000${month}`)) monthCount += count
    }
    return {
      dayCount: daily.get(`${accountId}\u0000${day}`) ?? 0,
      monthCount,
      burst: (burst.get(accountId) ?? []).filter((at) => at > now - windowMs)
    }
  }
  return {
    dayCount: (accountId, now) => Effect.sync(() => daily.get(`${accountId}\u0000${utcDay(now)}`) ?? 0),
    counts: (accountId, now, windowMs) =>
      Effect.sync(() => {
        const stored = loadNow(accountId, now, windowMs)
        return { today: stored.dayCount, thisMonth: stored.monthCount, inBurst: stored.burst.length }
      }),
    forget: (prefix, now, burstBefore) =>
      Effect.sync(() => {
        let removed = 0
        for (const key of daily.keys()) {
          const [accountId = "", day = ""] = key.split("\u0000")
          if (accountId.startsWith(prefix) && day < utcDay(now)) removed += Number(daily.delete(key))
        }
        for (const [accountId, stamps] of burst) {
          if (!accountId.startsWith(prefix)) continue
          const kept = stamps.filter((at) => at > burstBefore)
          removed += stamps.length - kept.length
          burst.set(accountId, kept)
        }
        return removed
      }),
    // One process, and the limiter settles one batch at a time: nothing can interleave.
    settle: (now, accounts, decider) =>
      Effect.sync(() => {
        const reloaded = new Map<string, StoredUsage>()
        for (const { accountId, windowMs } of accounts) {
          const dayCount = daily.get(`${accountId}\u0000${utcDay(now)}`) ?? 0
          if (!decider.current(accountId, dayCount)) reloaded.set(accountId, loadNow(accountId, now, windowMs))
        }
        const batch = decider.decide(reloaded)
        for (const item of batch) {
          const key = `${item.accountId}\u0000${utcDay(item.at)}`
          daily.set(key, (daily.get(key) ?? 0) + 1)
          const stamps = burst.get(item.accountId) ?? []
          stamps.push(item.at)
          burst.set(item.accountId, stamps)
        }
        const windows = new Map(batch.map((item) => [item.accountId, item.windowMs]))
        for (const [accountId, windowMs] of windows) {
          const stamps = burst.get(accountId)
          if (stamps !== undefined) burst.set(accountId, stamps.filter((at) => at > now - windowMs))
        }
      })
  }
}

/** The request quota's limiter over counters in memory: for tests that move the clock without a database. */
export const RateLimiterInMemory = RateLimiter.layer.pipe(Layer.provide(Layer.sync(UsageStore, makeMemoryUsageStore)))
