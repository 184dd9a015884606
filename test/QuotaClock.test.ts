import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Either, Exit, Layer, Scope, TestClock } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { ApiKeyContext, QuotaPlan } from "../src/Auth/CurrentKey.js"
import { RateLimiter } from "../src/Quota/RateLimiter.js"
import { quotaRowsElsewhere } from "./support/Elsewhere.js"
import { RateLimiterInMemory } from "./support/MemoryUsageStore.js"
import { TestConfig, TestDatabase } from "./support/TestServer.js"
import { advance } from "./support/Advance.js"
import { WorkspaceId } from "../src/Domain/Ids.js"

const keyOf = (accountId: string, plan: Omit<QuotaPlan, "planId">): ApiKeyContext => ({
  keyId: `key_${accountId}`,
  workspaceId: WorkspaceId.make("ws_clock"),
  accountId,
  role: "owner",
  surveyIds: null,
  quota: { planId: "test", ...plan }
})

/** Admits one request: the Retry-After seconds when refused, "ok" when counted. */
const attempt = (key: ApiKeyContext) =>
  Effect.flatMap(RateLimiter, (limiter) => Effect.either(limiter.admit(key))).pipe(
    Effect.map((result) =>
      Either.isRight(result)
        ? "ok"
        : result.left._tag === "RateLimited"
        ? result.left.retryAfterSeconds
        : result.left._tag
    )
  )

const usage = (key: ApiKeyContext) => Effect.flatMap(RateLimiter, (limiter) => limiter.usage(key))

const at = (iso: string) => TestClock.setTime(Date.parse(iso))

const variants = [
  ["in memory", () => RateLimiterInMemory],
  ["in SQLite", () => RateLimiter.layer.pipe(Layer.provide(TestDatabase()))],
  ["beside an in-memory database", () => RateLimiter.layer.pipe(Layer.provide(TestDatabase(undefined, { databasePath: ":memory:" })))]
] as const

for (const [name, limiterLayer] of variants) {
  describe(`RateLimiter over counters ${name}`, () => {
    it.effect("the burst window slides: each request frees its place exactly one window later", () =>
      Effect.gen(function*() {
        const key = keyOf("acc_burst", { burstLimit: 3, burstWindowMinutes: 1, dailyLimit: 100, monthlyLimit: 100 })
        yield* at("2026-03-10T10:00:00.000Z")
        expect(yield* attempt(key)).toBe("ok")
        yield* advance("20 seconds")
        expect(yield* attempt(key)).toBe("ok")
        yield* advance("20 seconds")
        expect(yield* attempt(key)).toBe("ok")
        expect(yield* attempt(key)).toBe(20)
        yield* advance("19900 millis")
        expect(yield* attempt(key)).toBe(1)
        yield* advance("100 millis")
        expect(yield* attempt(key)).toBe("ok")
        expect(yield* attempt(key)).toBe(20)
        const report = yield* usage(key)
        expect(report).toMatchObject({ usedToday: 4, usedThisMonth: 4, usedInBurstWindow: 3 })
        // A longer window keeps requests longer.
        const slow = keyOf("acc_slow", { burstLimit: 1, burstWindowMinutes: 5, dailyLimit: 100, monthlyLimit: 100 })
        expect(yield* attempt(slow)).toBe("ok")
        expect(yield* attempt(slow)).toBe(300)
        yield* advance("4 minutes")
        expect(yield* attempt(slow)).toBe(60)
      }).pipe(Effect.provide(limiterLayer())))

    it.effect("the day starts at UTC midnight, and the month keeps counting across it", () =>
      Effect.gen(function*() {
        const key = keyOf("acc_day", { burstLimit: 100, burstWindowMinutes: 1, dailyLimit: 2, monthlyLimit: 10 })
        yield* at("2026-06-15T18:30:00.000Z")
        expect(yield* attempt(key)).toBe("ok")
        expect(yield* attempt(key)).toBe("ok")
        expect(yield* attempt(key)).toBe(5.5 * 3600)
        expect(yield* usage(key)).toMatchObject({
          usedToday: 2,
          remainingToday: 0,
          resetAt: Date.parse("2026-06-16T00:00:00.000Z")
        })
        yield* at("2026-06-15T23:59:59.999Z")
        expect(yield* attempt(key)).toBe(1)
        yield* advance("1 millis")
        expect(yield* attempt(key)).toBe("ok")
        expect(yield* usage(key)).toMatchObject({
          usedToday: 1,
          remainingToday: 1,
          usedThisMonth: 3,
          resetAt: Date.parse("2026-06-17T00:00:00.000Z")
        })
      }).pipe(Effect.provide(limiterLayer())))

    const monthEnds = [
      { days: 28, lastDay: "2026-02-28", nextMonth: "2026-03-01" },
      { days: 29, lastDay: "2028-02-29", nextMonth: "2028-03-01" },
      { days: 30, lastDay: "2026-04-30", nextMonth: "2026-05-01" },
      { days: 31, lastDay: "2026-01-31", nextMonth: "2026-02-01" }
    ] as const
    for (const { days, lastDay, nextMonth } of monthEnds) {
      it.effect(`a month of ${days} days ends at its last UTC midnight`, () =>
        Effect.gen(function*() {
          const key = keyOf(`acc_month_${days}`, { burstLimit: 100, burstWindowMinutes: 1, dailyLimit: 5, monthlyLimit: 3 })
          // Mid-month, spending the whole month's quota: the wait runs to the first of the next month.
          yield* at(`${lastDay.slice(0, 8)}10T00:00:00.000Z`)
          for (let i = 0; i < 3; i++) expect(yield* attempt(key)).toBe("ok")
          expect(yield* attempt(key)).toBe((days - 9) * 86_400)
          yield* at(`${lastDay}T00:00:00.000Z`)
          expect(yield* attempt(key)).toBe(86_400)
          expect(yield* usage(key)).toMatchObject({ usedToday: 0, usedThisMonth: 3 })
          yield* at(`${lastDay}T23:59:59.400Z`)
          expect(yield* attempt(key)).toBe(1)
          yield* at(`${nextMonth}T00:00:00.000Z`)
          expect(yield* attempt(key)).toBe("ok")
          expect(yield* usage(key)).toMatchObject({
            usedToday: 1,
            usedThisMonth: 1,
            resetAt: Date.parse(`${nextMonth}T00:00:00.000Z`) + 86_400_000
          })
        }).pipe(Effect.provide(limiterLayer())))
    }

    it.effect("every key of one account shares the counters; other accounts are apart", () =>
      Effect.gen(function*() {
        const plan = { burstLimit: 2, burstWindowMinutes: 1, dailyLimit: 100, monthlyLimit: 100 }
        const first = keyOf("acc_shared", plan)
        const second = { ...first, keyId: "key_other" }
        expect(yield* attempt(first)).toBe("ok")
        expect(yield* attempt(second)).toBe("ok")
        expect(yield* attempt(first)).toBe(60)
        expect(yield* attempt(keyOf("acc_apart", plan))).toBe("ok")
      }).pipe(Effect.provide(limiterLayer())))
  })
}

describe("RateLimiter storage", () => {
  /** A database file of its own for the test, and a way to start limiters (processes) over it, each closed by its scope. */
  const sharedFile = (prefix: string) =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), prefix))
      const file = join(dir, "survey.db")
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const start = () =>
        Effect.gen(function*() {
          const scope = yield* Scope.make()
          const context = yield* Layer.buildWithScope(
            RateLimiter.layer.pipe(Layer.provide(TestDatabase(undefined, { databasePath: file }))),
            scope
          )
          return { scope, limiter: Context.get(context, RateLimiter) }
        })
      return { file, start }
    })

  it.effect("usage counts what every process admitted: counters held in memory answer only while the stored day count confirms them", () =>
    Effect.gen(function*() {
      const { start } = yield* sharedFile("quota-usage-")
      const key = keyOf("acc_two", { burstLimit: 100, burstWindowMinutes: 1, dailyLimit: 100, monthlyLimit: 1000 })
      yield* at("2026-07-01T08:00:00.000Z")
      const one = (yield* start()).limiter
      const two = (yield* start()).limiter
      const admitted = (limiter: RateLimiter["Type"], n: number) =>
        Effect.forEach(Array.from({ length: n }), () => limiter.admit(key), { discard: true })
      yield* admitted(one, 3)
      expect(yield* one.usage(key)).toMatchObject({ usedToday: 3, usedThisMonth: 3, usedInBurstWindow: 3 })
      // The other process counts: the first one's counters in memory are no longer the stored ones.
      yield* admitted(two, 2)
      expect(yield* one.usage(key)).toMatchObject({ usedToday: 5, usedThisMonth: 5, usedInBurstWindow: 5 })
      yield* advance("30 seconds")
      yield* admitted(one, 1)
      expect(yield* one.usage(key)).toMatchObject({ usedToday: 6, usedInBurstWindow: 6 })
      expect(yield* two.usage(key)).toMatchObject({ usedToday: 6, usedThisMonth: 6, usedInBurstWindow: 6 })
      // The window slides in both: the first five requests leave it together.
      yield* advance("30 seconds")
      expect(yield* one.usage(key)).toMatchObject({ usedToday: 6, usedInBurstWindow: 1 })
      expect(yield* two.usage(key)).toMatchObject({ usedToday: 6, usedInBurstWindow: 1 })
    }).pipe(Effect.scoped))

  it.effect("every admitted request is on disk before it is answered; a restart (or a crash) carries on with the day, month and burst window", () =>
    Effect.gen(function*() {
      const { file, start } = yield* sharedFile("quota-restart-")
      const key = keyOf("acc_durable", { burstLimit: 5, burstWindowMinutes: 1, dailyLimit: 100, monthlyLimit: 1000 })
      const admit = (limiter: RateLimiter["Type"]) =>
        Effect.map(Effect.either(limiter.admit(key)), (r) => Either.isRight(r) ? "ok" : r.left)
      const onDisk = Effect.gen(function*() {
        const config = Effect.provide(TestConfig({ databasePath: file }))
        return {
          daily: yield* config(
            quotaRowsElsewhere("SELECT day, count FROM usage_daily WHERE account_id = 'acc_durable' AND count > 0 ORDER BY day")
          ),
          burst: (yield* config(
            quotaRowsElsewhere("SELECT COALESCE(SUM(count), 0) AS n FROM usage_burst WHERE account_id = 'acc_durable'")
          ))[0]
        }
      })

      yield* at("2026-05-31T23:59:30.000Z")
      const first = yield* start()
      expect(yield* admit(first.limiter)).toBe("ok")
      yield* advance("40 seconds")
      for (let i = 0; i < 3; i++) expect(yield* admit(first.limiter)).toBe("ok")
      // Read by another connection: every admitted request is stored.
      expect(yield* onDisk).toEqual({
        daily: [{ day: "2026-05-31", count: 1 }, { day: "2026-06-01", count: 3 }],
        burst: { n: 4 }
      })

      // A crash right after one more request: a second process over the same file, the first never closed.
      expect(yield* admit(first.limiter)).toBe("ok")
      const second = yield* start()
      expect(yield* second.limiter.usage(key)).toMatchObject({ usedToday: 4, usedThisMonth: 4, usedInBurstWindow: 5 })
      yield* Scope.close(second.scope, Exit.void)
      yield* Scope.close(first.scope, Exit.void)

      // The next process carries on with the day, month and burst window.
      const third = yield* start()
      expect(yield* third.limiter.usage(key)).toMatchObject({ usedToday: 4, usedThisMonth: 4, usedInBurstWindow: 5 })
      const refused = yield* admit(third.limiter)
      expect(refused).toMatchObject({ _tag: "RateLimited", retryAfterSeconds: 20 })
      yield* advance("20 seconds")
      expect(yield* admit(third.limiter)).toBe("ok")
      expect(yield* third.limiter.usage(key)).toMatchObject({ usedToday: 5, usedInBurstWindow: 5 })
      yield* Scope.close(third.scope, Exit.void)
    }).pipe(Effect.scoped))
})
