import { SqlClient } from "@effect/sql"
import type { Database } from "bun:sqlite"
import { Clock, Effect, Schedule } from "effect"
import type { ServiceUnavailable } from "../Domain/Errors.js"
import { isSqliteBusy } from "../Sql/Busy.js"
import { column, rowShape } from "../Sql/Rows.js"
import { inBatches } from "../Sql/Transactions.js"
import type { StoredUsage } from "./AccountUsage.js"
import { utcDay, utcMonth } from "./Calendar.js"
import {
  addBurstSql,
  addDailySql,
  BurstColumns,
  DailyColumns,
  openQuotaFile,
  openQuotaMemory,
  quotaFilePath,
  recentRows,
  takeOver,
  type TakenOver
} from "./QuotaFileSql.js"
import { aggregate, pruning, storeBusy, storedUsage } from "./UsageRows.js"
import type { BatchAccount, Decider, UsageCounts, UsageStoreShape } from "./UsageStore.js"

/** How long the store's own SQLite connection waits for a lock at a time (it blocks the thread meanwhile). */
const WAIT_MS = 2

/** A row of `PRAGMA database_list`: an attached database and its file ("" in memory). */
const AttachedDatabase = rowShape({ seq: column.num("seq"), name: column.text("name"), file: column.nullableText("file") })

/** The name SQLite gives the file of a connection's main database; undefined in memory. */
export const mainFilePath = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql.unsafe("PRAGMA database_list").values
  for (const row of rows) {
    if (AttachedDatabase.at.name(row) === "main") {
      const file = AttachedDatabase.at.file(row)
      return file !== null && file !== "" ? file : undefined
    }
  }
  return undefined
})

// The quota file's reads: a day's count (also what locking the day's row answers), the month's
// sum, the burst window's rows, and the three counts together.
const DayCount = rowShape({ count: column.num("count") })
const MonthCount = rowShape({ count: column.num("COALESCE(SUM(count), 0)") })
const Stamp = rowShape({ atMs: column.num("at_ms"), count: column.num("count") })
const Counts = rowShape({
  today: column.map(column.nullableNum("today"), (today) => today ?? 0),
  thisMonth: column.num("this_month"),
  inBurst: column.num("in_burst")
})

/**
 * Takes the counts of the main file's `usage_daily` / `usage_burst` (read through the service's
 * client; every row when `everything`, else the recent ones) over into the quota file, adding only
 * what was not taken over before (`takeOver`).
 */
export const takeOverMainCounts = (quota: Database, now: number, everything: boolean) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const recent = recentRows(now)
    const dailyColumns = sql.literal(DailyColumns.columns)
    const burstColumns = sql.literal(BurstColumns.columns)
    const dailyRows = yield* (everything
      ? sql`SELECT ${dailyColumns} FROM usage_daily`
      : sql`SELECT ${dailyColumns} FROM usage_daily WHERE day >= ${recent.dailyFrom}`).values
    const burstRows = yield* (everything
      ? sql`SELECT ${burstColumns} FROM usage_burst`
      : sql`SELECT ${burstColumns} FROM usage_burst WHERE at_ms > ${recent.burstAfter}`).values
    const daily = dailyRows.map(DailyColumns.read)
    const burst = burstRows.map(BurstColumns.read)
    if (daily.length === 0 && burst.length === 0) return { daily: 0, burst: 0 } satisfies TakenOver
    return takeOver(quota, { daily, burst }, { keepDailyFrom: recent.dailyFrom, keepBurstAfter: recent.burstAfter })
  })

/**
 * The quota file of the service's SQLite file, opened (created anew when missing, and said so) with
 * what an earlier version counted in the main file since taken over; in memory beside an in-memory
 * database.
 */
const openCounters = (busyTimeoutMs: number) =>
  Effect.gen(function*() {
    const path = yield* Effect.orDie(mainFilePath)
    if (path === undefined) {
      return yield* Effect.acquireRelease(Effect.sync(openQuotaMemory), (db) => Effect.sync(() => db.close()))
    }
    const { db, existed } = yield* Effect.acquireRelease(
      Effect.sync(() => openQuotaFile(path, busyTimeoutMs)),
      ({ db }) => Effect.sync(() => db.close())
    )
    if (!existed) {
      // Migration 0013 created the file: it went missing since (deleted, or the main file was
      // restored or copied without it).
      yield* Effect.logWarning(
        `The request quota file ${quotaFilePath(path)} was missing and was created anew: ` +
          "the request counts stored in it are lost, and the current day, month and burst window are counted " +
          "again from zero (or from what an earlier version left in the database file). " +
          "To keep them, stop the service and restore the file from the backup taken with the database file."
      )
    }
    const now = yield* Clock.currentTimeMillis
    const taken = yield* Effect.orDie(takeOverMainCounts(db, now, false))
    if (taken.daily > 0 || taken.burst > 0) {
      yield* Effect.logInfo(
        `Took over ${taken.daily} request counts written to the database file's usage tables by an earlier version`
      )
    }
    return db
  })

/**
 * The counters on SQLite, in the quota file beside the service's file (src/Quota/QuotaFileSql.ts).
 *
 * Measured shortcut: the quota's commits go to a file of their own, skipping the main file's write
 * lock and leaving its readers' cached pages alone, through raw `bun:sqlite`, the one place the
 * service's client cannot serve: a connection of the store's own whose transaction runs start to
 * end in one synchronous call of prepared statements, skipping the client's per-statement
 * machinery. No other fiber of this process can find the write lock held halfway
 * (test/QuotaFile.test.ts, test/Quota.test.ts). Measurement:
 * docs/performance.md#measured-shortcuts, "The quota file".
 */
export const makeQuotaFileStore = (busyTimeoutMs: number) =>
  Effect.gen(function*() {
    const db = yield* openCounters(busyTimeoutMs)
    db.exec(`PRAGMA busy_timeout = ${WAIT_MS}`)
    const lastPruned = new Map<string, number>()
    const dayCount = db.query(`SELECT ${DayCount.columns} FROM usage_daily WHERE account_id = ? AND day = ?`)
    const monthCount = db.query(
      `SELECT ${MonthCount.columns} FROM usage_daily WHERE account_id = ? AND day >= ? AND day <= ?`
    )
    const burstRows = db.query(`SELECT ${Stamp.columns} FROM usage_burst WHERE account_id = ? AND at_ms > ? ORDER BY at_ms`)
    // Read by `Counts`: today's count (null without a row), the month's, the burst window's.
    const allCounts = db.query(`SELECT
        (SELECT count FROM usage_daily WHERE account_id = ?1 AND day = ?2),
        (SELECT COALESCE(SUM(count), 0) FROM usage_daily WHERE account_id = ?1 AND day >= ?3 AND day <= ?4),
        (SELECT COALESCE(SUM(count), 0) FROM usage_burst WHERE account_id = ?1 AND at_ms > ?5)`)
    const lockDay = db.query(`INSERT INTO usage_daily (account_id, day, count) VALUES (?, ?, 0)
      ON CONFLICT (account_id, day) DO UPDATE SET count = usage_daily.count RETURNING ${DayCount.columns}`)
    const addDay = db.query(addDailySql)
    const addStamp = db.query(addBurstSql)
    const pruneStamps = db.query("DELETE FROM usage_burst WHERE account_id = ? AND at_ms <= ?")
    // At most a batch of rows per statement: the file's one writer is on every request's path.
    const forgetDays = db.query(`DELETE FROM usage_daily WHERE (account_id, day) IN (
      SELECT account_id, day FROM usage_daily WHERE account_id LIKE ? AND day < ? LIMIT ?)`)
    const forgetStamps = db.query(`DELETE FROM usage_burst WHERE (account_id, at_ms) IN (
      SELECT account_id, at_ms FROM usage_burst WHERE account_id LIKE ? AND at_ms <= ? LIMIT ?)`)

    const dayCountNow = (accountId: string, now: number) => {
      const row = dayCount.values(accountId, utcDay(now))[0]
      return row === undefined ? 0 : DayCount.at.count(row)
    }

    const loadNow = (accountId: string, now: number, windowMs: number): StoredUsage => {
      const month = utcMonth(now)
      const thisMonth = monthCount.values(accountId, `${month}-01`, `${month}-31`)[0] ?? []
      const rows = burstRows.values(accountId, now - windowMs).map(Stamp.read)
      return storedUsage(dayCountNow(accountId, now), MonthCount.at.count(thisMonth), rows)
    }

    // The transaction holds the file's one write lock from BEGIN IMMEDIATE: the accounts need no order.
    const settleNow = (now: number, accounts: ReadonlyArray<BatchAccount>, decider: Decider) => {
      db.exec("BEGIN IMMEDIATE")
      try {
        const reloaded = new Map<string, StoredUsage>()
        for (const { accountId, windowMs } of accounts) {
          const locked = DayCount.at.count(lockDay.values(accountId, utcDay(now))[0] ?? [])
          if (!decider.current(accountId, locked)) reloaded.set(accountId, loadNow(accountId, now, windowMs))
        }
        const { days, stamps, windows } = aggregate(decider.decide(reloaded))
        for (const d of days) addDay.run(d.accountId, d.day, d.count)
        for (const s of stamps) addStamp.run(s.accountId, s.atMs, s.count)
        const prune = pruning(lastPruned, windows, now)
        for (const p of prune) pruneStamps.run(p.accountId, p.before)
        db.exec("COMMIT")
        for (const p of prune) lastPruned.set(p.accountId, now)
      } catch (error) {
        if (!db.inTransaction) throw error
        db.exec("ROLLBACK")
        throw error
      }
    }

    const countsNow = (accountId: string, now: number, windowMs: number): UsageCounts => {
      const month = utcMonth(now)
      return Counts.read(allCounts.values(accountId, utcDay(now), `${month}-01`, `${month}-31`, now - windowMs)[0] ?? [])
    }

    /**
     * SQLite waits for a lock by blocking the process's only thread: each try waits at most
     * `WAIT_MS`, then the process's other fibers run before the next, until the busy timeout is
     * spent. BUSY can only come from reading or from BEGIN IMMEDIATE (the lock is then ours until
     * COMMIT): nothing was written.
     */
    const onBusyFile = Schedule.recurs(Math.ceil(Math.max(0, busyTimeoutMs) / WAIT_MS)).pipe(
      Schedule.tapOutput(() => Effect.yieldNow())
    )
    const withRetries = <A>(run: () => A): Effect.Effect<A, ServiceUnavailable> =>
      Effect.try({ try: run, catch: (error) => error }).pipe(
        Effect.retry({ schedule: onBusyFile, while: isSqliteBusy }),
        Effect.catchAll((error) => isSqliteBusy(error) ? Effect.fail(storeBusy()) : Effect.die(error))
      )

    return {
      dayCount: (accountId, now) => withRetries(() => dayCountNow(accountId, now)),
      counts: (accountId, now, windowMs) => withRetries(() => countsNow(accountId, now, windowMs)),
      // On every request's path (one call per batch): no span of its own.
      settle: (now, accounts, decider) => withRetries(() => settleNow(now, accounts, decider)),
      forget: (prefix, now, burstBefore) =>
        Effect.zipWith(
          inBatches("usage count purge", (limit) => withRetries(() => forgetDays.run(`${prefix}%`, utcDay(now), limit).changes)),
          inBatches("usage count purge", (limit) => withRetries(() => forgetStamps.run(`${prefix}%`, burstBefore, limit).changes)),
          (days, stamps) => days + stamps
        )
    } satisfies UsageStoreShape
  })
