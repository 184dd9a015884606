import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { isDatabaseUnavailable, isPgPoolExhausted } from "../Sql/Busy.js"
import { Reader } from "../Sql/Reader.js"
import { column, rowShape } from "../Sql/Rows.js"
import { inBatches } from "../Sql/Transactions.js"
import type { StoredUsage } from "./AccountUsage.js"
import { utcDay, utcMonth } from "./Calendar.js"
import { aggregate, pruning, storeBusy, storedUsages } from "./UsageRows.js"
import type { BatchAccount, Decider, UsageCounts, UsageStoreShape } from "./UsageStore.js"

const DayCount = rowShape({ count: column.num("count") })
const LockedDay = rowShape({ accountId: column.text("account_id"), count: column.num("count") })
const Stored = rowShape({ accountId: column.text("account_id"), atMs: column.num("at_ms"), count: column.num("count") })
const dayCountSql = `SELECT ${DayCount.columns} FROM usage_daily WHERE account_id = ? AND day = ?`
// The three counts in one round trip: (account, day, first and last day of the month, burst window start).
const Counts = rowShape({ today: column.num("today"), thisMonth: column.num("this_month"), inBurst: column.num("in_burst") })
const countsSql = `SELECT
    COALESCE((SELECT count FROM usage_daily WHERE account_id = ?1 AND day = ?2), 0) AS today,
    (SELECT COALESCE(SUM(count), 0) FROM usage_daily WHERE account_id = ?1 AND day >= ?3 AND day <= ?4) AS this_month,
    (SELECT COALESCE(SUM(count), 0) FROM usage_burst WHERE account_id = ?1 AND at_ms > ?5) AS in_burst`

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

  /**
   * Every account's day row of a batch, locked in one statement: a write, so that the rows stay
   * locked until commit, in one order in every process (the ids' bytes: two batches holding the
   * same counters, an address's and a survey's, in opposite orders would otherwise deadlock).
   * Answers each account's count of the day.
   */
  const lockDays = (accountIds: ReadonlyArray<string>, day: string) =>
    Effect.map(
      sql`INSERT INTO usage_daily (account_id, day, count)
            SELECT a.account_id, ${day}, 0 FROM unnest(${accountIds}::text[]) AS a(account_id)
            ORDER BY a.account_id COLLATE "C"
            ON CONFLICT (account_id, day) DO UPDATE SET count = usage_daily.count
            RETURNING ${sql.literal(LockedDay.columns)}`.values,
      (rows) => new Map(rows.map((row) => {
        const locked = LockedDay.read(row)
        return [locked.accountId, locked.count]
      }))
    )

  /**
   * The stored counters of the accounts another process added to, in one round trip: for each,
   * this month's count (as at_ms -1, first) and the stamps of its burst window in order; today's
   * count is the one the batch's lock of its day row answered.
   */
  const loadRows = (accounts: ReadonlyArray<BatchAccount>, now: number, today: ReadonlyMap<string, number>) => {
    const month = utcMonth(now)
    const ids = accounts.map((a) => a.accountId)
    return Effect.map(
      sql`SELECT w.account_id, -1 AS at_ms, COALESCE(SUM(d.count), 0) AS count
            FROM unnest(${ids}::text[]) AS w(account_id)
            LEFT JOIN usage_daily d ON d.account_id = w.account_id AND d.day >= ${`${month}-01`} AND d.day <= ${`${month}-31`}
            GROUP BY w.account_id
          UNION ALL
          SELECT b.account_id, b.at_ms, b.count
            FROM unnest(${ids}::text[], ${accounts.map((a) => now - a.windowMs)}::bigint[]) AS w(account_id, after)
            JOIN usage_burst b ON b.account_id = w.account_id AND b.at_ms > w.after
          ORDER BY 1, 2`.values,
      (rows) => storedUsages(ids, today, rows.map(Stored.read))
    )
  }

  // On `/usage` when this process's counters are not current: the reader's pooled, prepared read.
  const counts = (accountId: string, now: number, windowMs: number) => {
    const month = utcMonth(now)
    return reader.values(countsSql, [accountId, utcDay(now), `${month}-01`, `${month}-31`, now - windowMs]).pipe(
      Effect.flatMap((rows) =>
        rows[0] === undefined ? Effect.dieMessage("The usage counts answered no row") : Effect.succeed<UsageCounts>(Counts.read(rows[0]))
      ),
      busyOrDie,
      Effect.withSpan("UsageStore.counts")
    )
  }

  const settle = (now: number, accounts: ReadonlyArray<BatchAccount>, decider: Decider) =>
    Effect.gen(function*() {
      const today = yield* lockDays(accounts.map((a) => a.accountId), utcDay(now))
      const stale = accounts.filter((a) => !decider.current(a.accountId, today.get(a.accountId) ?? 0))
      const reloaded = stale.length === 0 ? new Map<string, StoredUsage>() : yield* loadRows(stale, now, today)
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
      if (prune.length > 0) {
        yield* sql`DELETE FROM usage_burst b
            USING unnest(${prune.map((p) => p.accountId)}::text[], ${prune.map((p) => p.before)}::bigint[]) AS p(account_id, before)
            WHERE b.account_id = p.account_id AND b.at_ms <= p.before`
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
      // At most a batch of rows per statement: a request's settle waits for the rows it counts on.
      const days = yield* inBatches("usage count purge", (limit) =>
        sql`DELETE FROM usage_daily WHERE (account_id, day) IN (
            SELECT account_id, day FROM usage_daily WHERE account_id LIKE ${`${prefix}%`} AND day < ${utcDay(now)} LIMIT ${limit})
          RETURNING account_id`.pipe(Effect.map((rows) => rows.length)))
      const stamps = yield* inBatches("usage count purge", (limit) =>
        sql`DELETE FROM usage_burst WHERE (account_id, at_ms) IN (
            SELECT account_id, at_ms FROM usage_burst WHERE account_id LIKE ${`${prefix}%`} AND at_ms <= ${burstBefore} LIMIT ${limit})
          RETURNING account_id`.pipe(Effect.map((rows) => rows.length)))
      return days + stamps
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
