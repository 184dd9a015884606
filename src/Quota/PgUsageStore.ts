import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import { isDatabaseUnavailable, isPgPoolExhausted } from "../Sql/Busy.js"
import { Reader } from "../Sql/Reader.js"
import { column, rowShape } from "../Sql/Rows.js"
import type { StoredUsage } from "./AccountUsage.js"
import { utcDay, utcMonth } from "./Calendar.js"
import { aggregate, pruning, storeBusy, storedUsage } from "./UsageRows.js"
import type { BatchAccount, Decider, UsageCounts, UsageStoreShape } from "./UsageStore.js"

const Count = Schema.Struct({ count: Schema.Number })
const AccountDay = Schema.Struct({ accountId: Schema.String, day: Schema.String })
const DayCount = rowShape({ count: column.num("count") })
const dayCountSql = `SELECT ${DayCount.columns} FROM usage_daily WHERE account_id = ? AND day = ?`
const MonthAndBurst = rowShape({ atMs: column.num("at_ms"), count: column.num("count") })

/**
 * The counters in the service's PostgreSQL database, through its client: a batch's transaction
 * locks each account's day row, so no other process decides for the account meanwhile.
 */
export const makePgUsageStore = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const reader = yield* Reader
  const lastPruned = new Map<string, number>()

  const busyOrDie = <A, R>(effect: Effect.Effect<A, unknown, R>) =>
    Effect.catchAll(effect, (error) =>
      // No pooled connection came free: the limiter answers it as such (src/Quota/RateLimiter.ts).
      isDatabaseUnavailable(error) && !isPgPoolExhausted(error) ? Effect.fail(storeBusy()) : Effect.die(error))

  // The three counts in one round trip.
  const allCounts = SqlSchema.single({
    Request: Schema.Struct({ accountId: Schema.String, day: Schema.String, month: Schema.String, after: Schema.Number }),
    Result: Schema.Struct({ today: Schema.Number, thisMonth: Schema.Number, inBurst: Schema.Number }),
    execute: ({ accountId, after, day, month }) =>
      sql`SELECT
            COALESCE((SELECT count FROM usage_daily WHERE account_id = ${accountId} AND day = ${day}), 0) AS today,
            (SELECT COALESCE(SUM(count), 0) FROM usage_daily
              WHERE account_id = ${accountId} AND day >= ${`${month}-01`} AND day <= ${`${month}-31`}) AS this_month,
            (SELECT COALESCE(SUM(count), 0) FROM usage_burst WHERE account_id = ${accountId} AND at_ms > ${after}) AS in_burst`
  })
  // A write, so that the row stays locked until commit.
  const lockDay = SqlSchema.single({
    Request: AccountDay,
    Result: Count,
    execute: ({ accountId, day }) =>
      sql`INSERT INTO usage_daily (account_id, day, count) VALUES (${accountId}, ${day}, 0)
            ON CONFLICT (account_id, day) DO UPDATE SET count = usage_daily.count
            RETURNING count`
  })

  /**
   * An account's stored counters once another process added to them: today's count, as the
   * batch's lock of the day row answered it, and this month's count with the burst window's
   * stamps in one round trip (the month's sum first, as at_ms -1, then the stamps in order).
   */
  const loadRows = (accountId: string, now: number, windowMs: number, today: number) => {
    const month = utcMonth(now)
    return Effect.map(
      sql`SELECT -1 AS at_ms, COALESCE(SUM(count), 0) AS count FROM usage_daily
            WHERE account_id = ${accountId} AND day >= ${`${month}-01`} AND day <= ${`${month}-31`}
          UNION ALL
          SELECT at_ms, count FROM usage_burst WHERE account_id = ${accountId} AND at_ms > ${now - windowMs}
          ORDER BY at_ms`.values,
      (rows) => {
        const [thisMonth, ...burst] = rows.map(MonthAndBurst.read)
        return storedUsage(today, thisMonth?.count ?? 0, burst)
      }
    )
  }

  const counts = (accountId: string, now: number, windowMs: number) =>
    allCounts({ accountId, day: utcDay(now), month: utcMonth(now), after: now - windowMs }).pipe(
      Effect.map((row): UsageCounts => row),
      busyOrDie,
      Effect.withSpan("UsageStore.counts")
    )

  const settle = (now: number, accounts: ReadonlyArray<BatchAccount>, decider: Decider) =>
    Effect.gen(function*() {
      const reloaded = new Map<string, StoredUsage>()
      // Rows are locked in one order in every process: two batches holding the same counters
      // (an address's and a survey's) in opposite orders would otherwise deadlock.
      const inLockOrder = [...accounts].sort((x, y) => (x.accountId < y.accountId ? -1 : x.accountId > y.accountId ? 1 : 0))
      for (const { accountId, windowMs } of inLockOrder) {
        const locked = yield* lockDay({ accountId, day: utcDay(now) })
        if (!decider.current(accountId, locked.count)) {
          reloaded.set(accountId, yield* loadRows(accountId, now, windowMs, locked.count))
        }
      }
      const { days, stamps, windows } = aggregate(decider.decide(reloaded))
      const prune = pruning(lastPruned, windows, now)
      if (days.length > 0) {
        // Both tables in one statement: one round trip less while the accounts' day rows are locked.
        yield* sql`WITH added AS (
              INSERT INTO usage_daily ${sql.insert(days)}
              ON CONFLICT (account_id, day) DO UPDATE SET count = usage_daily.count + excluded.count
            )
            INSERT INTO usage_burst ${sql.insert(stamps)}
            ON CONFLICT (account_id, at_ms) DO UPDATE SET count = usage_burst.count + excluded.count`
      }
      for (const p of prune) {
        yield* sql`DELETE FROM usage_burst WHERE account_id = ${p.accountId} AND at_ms <= ${p.before}`
      }
      return prune
    }).pipe(
      sql.withTransaction,
      busyOrDie,
      Effect.map((prune) => prune.forEach((p) => lastPruned.set(p.accountId, now))),
      Effect.withSpan("UsageStore.settle")
    )

  const forget = (prefix: string, now: number, burstBefore: number) =>
    Effect.gen(function*() {
      const days = yield* sql`DELETE FROM usage_daily WHERE account_id LIKE ${`${prefix}%`} AND day < ${utcDay(now)}
          RETURNING account_id`
      const stamps = yield* sql`DELETE FROM usage_burst WHERE account_id LIKE ${`${prefix}%`} AND at_ms <= ${burstBefore}
          RETURNING account_id`
      return days.length + stamps.length
    }).pipe(busyOrDie, Effect.withSpan("UsageStore.forget"))

  return {
    // On every `/usage`: the reader's pooled, prepared read, not the client's acquisition (src/Sql/Reader.ts).
    dayCount: (accountId, now) =>
      busyOrDie(Effect.map(
        reader.values(dayCountSql, [accountId, utcDay(now)]),
        (rows) => rows[0] === undefined ? 0 : DayCount.at.count(rows[0])
      )),
    counts,
    settle,
    forget
  } satisfies UsageStoreShape
})
