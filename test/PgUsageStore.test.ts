import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { StoredUsage } from "../src/Quota/AccountUsage.js"
import { utcDay } from "../src/Quota/Calendar.js"
import { UsageStore } from "../src/Quota/UsageStore.js"
import { onOutside, outsideConnection } from "./support/OutsideConnection.js"
import { testDatabase, TestDatabase } from "./support/TestServer.js"

// A batch of several counters (an address's and many surveys', for the respondent limits) locks
// their day rows and reads again those another process added to in one statement each: every
// counter must get its own rows back, within its own window.
describe.skipIf(testDatabase !== "postgres")("a batch of several counters on PostgreSQL", () => {
  const now = Date.UTC(2026, 10, 27, 12, 0, 0)
  const today = utcDay(now)
  const earlier = utcDay(now - 3 * 86_400_000)
  const lastMonth = utcDay(Date.UTC(2026, 9, 30))

  layer(TestDatabase())((it) => {
    it.scoped("reads each counter's own day, month and burst window, and prunes each by its window", () =>
      Effect.gen(function*() {
        const store = yield* UsageStore
        const outside = yield* outsideConnection
        yield* onOutside(
          outside,
          `INSERT INTO usage_daily (account_id, day, count) VALUES
             ('batch-a', '${today}', 3), ('batch-a', '${earlier}', 5), ('batch-a', '${lastMonth}', 100),
             ('batch-b', '${today}', 1), ('batch-d', '${today}', 7)`
        )
        yield* onOutside(
          outside,
          `INSERT INTO usage_burst (account_id, at_ms, count) VALUES
             ('batch-a', ${now - 1000}, 2), ('batch-a', ${now - 5000}, 1), ('batch-a', ${now - 70_000}, 4),
             ('batch-b', ${now - 500}, 1), ('batch-b', ${now - 5000}, 3),
             ('batch-d', ${now - 100}, 9)`
        )
        let seen: ReadonlyMap<string, StoredUsage> = new Map()
        yield* store.settle(
          now,
          [
            { accountId: "batch-b", windowMs: 1000 },
            { accountId: "batch-c", windowMs: 60_000 },
            { accountId: "batch-a", windowMs: 60_000 }
          ],
          {
            current: () => false,
            decide: (reloaded) => {
              seen = reloaded
              return [
                { accountId: "batch-a", at: now, windowMs: 60_000 },
                { accountId: "batch-b", at: now, windowMs: 1000 },
                { accountId: "batch-c", at: now, windowMs: 60_000 }
              ]
            }
          }
        )
        expect(Object.fromEntries(seen)).toEqual({
          "batch-a": { dayCount: 3, monthCount: 8, burst: [now - 5000, now - 1000, now - 1000] },
          "batch-b": { dayCount: 1, monthCount: 1, burst: [now - 500] },
          "batch-c": { dayCount: 0, monthCount: 0, burst: [] }
        })
        const days = yield* onOutside(
          outside,
          `SELECT account_id, count::int AS count FROM usage_daily WHERE day = '${today}' ORDER BY account_id`
        )
        expect(days.rows).toEqual([
          { account_id: "batch-a", count: 4 },
          { account_id: "batch-b", count: 2 },
          { account_id: "batch-c", count: 1 },
          { account_id: "batch-d", count: 7 }
        ])
        // Each counter's stamps past its own window are gone; another counter's are untouched.
        const burst = yield* onOutside(
          outside,
          `SELECT account_id, (at_ms - ${now})::int AS ago, count::int AS count FROM usage_burst ORDER BY account_id, at_ms`
        )
        expect(burst.rows).toEqual([
          { account_id: "batch-a", ago: -5000, count: 1 },
          { account_id: "batch-a", ago: -1000, count: 2 },
          { account_id: "batch-a", ago: 0, count: 1 },
          { account_id: "batch-b", ago: -500, count: 1 },
          { account_id: "batch-b", ago: 0, count: 1 },
          { account_id: "batch-c", ago: 0, count: 1 },
          { account_id: "batch-d", ago: -100, count: 9 }
        ])
      }))

    it.scoped("counters whose day rows say they are current are not read again", () =>
      Effect.gen(function*() {
        const store = yield* UsageStore
        const outside = yield* outsideConnection
        yield* onOutside(outside, `INSERT INTO usage_daily (account_id, day, count) VALUES ('cur-a', '${today}', 4), ('cur-b', '${today}', 6)`)
        const asked: Array<[string, number]> = []
        let reloaded: Array<string> = []
        yield* store.settle(now, [{ accountId: "cur-b", windowMs: 60_000 }, { accountId: "cur-a", windowMs: 60_000 }], {
          current: (accountId, dayCount) => {
            asked.push([accountId, dayCount])
            return accountId === "cur-a"
          },
          decide: (stored) => {
            reloaded = [...stored.keys()]
            return []
          }
        })
        expect(asked.sort()).toEqual([["cur-a", 4], ["cur-b", 6]])
        expect(reloaded).toEqual(["cur-b"])
      }))
  })
})
