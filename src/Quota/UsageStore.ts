import { SqlClient, SqlSchema } from "@effect/sql"
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { AppConfig } from "../Config.js"
import { ServiceUnavailable } from "../Domain/Errors.js"
import { isDatabaseUnavailable, isPgPoolExhausted, isSqliteBusy } from "../Sql/Busy.js"
import { dialectOf } from "../Sql/Dialect.js"
import { nullableNum, num } from "../Sql/Rows.js"
import type { StoredUsage } from "./AccountUsage.js"
import { utcDay, utcMonth } from "./Calendar.js"
import { addBurstSql, addDailySql, openQuotaFile, quotaFilePath } from "./QuotaFile.js"
import { mainFilePath, takeOverMainCounts } from "./TakeOver.js"

/** One counted request on its way to the store. */
export interface CountedRequest {
  readonly accountId: string
  readonly at: number
  readonly windowMs: number
}

/** An account a batch of requests is decided for. */
export interface BatchAccount {
  readonly accountId: string
  readonly windowMs: number
}

/**
 * Decides a batch inside the store's transaction. `current(accountId, dayCount)` tells, from the
 * locked count of the account's UTC day, whether the counters held in memory are still exact;
 * `decide` gets the stored counters of the accounts that are not (only those) and answers the
 * requests it admitted, which the store records before the transaction commits.
 */
export interface Decider {
  readonly current: (accountId: string, dayCount: number) => boolean
  readonly decide: (reloaded: ReadonlyMap<string, StoredUsage>) => ReadonlyArray<CountedRequest>
}

/** What GET /usage reports of an account, as stored. */
export interface UsageCounts {
  readonly today: number
  readonly thisMonth: number
  readonly inBurst: number
}

/** Where the quota counters live, shared by every process on the database. */
export interface UsageStoreShape {
  /** The stored count of the UTC day holding `now` (0 when nothing was counted). One indexed read. */
  readonly dayCount: (accountId: string, now: number) => Effect.Effect<number, ServiceUnavailable>
  /** The counts of the day and month holding `now`, and the requests in the burst window ending at `now`. */
  readonly counts: (accountId: string, now: number, windowMs: number) => Effect.Effect<UsageCounts, ServiceUnavailable>
  /**
   * One transaction holding each account's day row locked (on SQLite, the database's write lock)
   * while `decider` decides and its admitted requests are recorded: no other process decides for
   * these accounts meanwhile. Fails with 503 when the store stays busy; then nothing was written.
   */
  readonly settle: (now: number, accounts: ReadonlyArray<BatchAccount>, decider: Decider) => Effect.Effect<void, ServiceUnavailable>
  /**
   * Deletes the counters of the ids starting with `prefix` that no longer count: days before the
   * one holding `now`, stamps at or before `burstBefore`. Answers how many rows went.
   */
  readonly forget: (prefix: string, now: number, burstBefore: number) => Effect.Effect<number, ServiceUnavailable>
}

export class UsageStore extends Context.Tag("Quota/UsageStore")<UsageStore, UsageStoreShape>() {}

const busyMessage = "The service is busy; nothing changed and the request may be retried."
const busy = () => new ServiceUnavailable({ message: busyMessage })

const PRUNE_EVERY_MS = 10_000

/** How long the limiter's own SQLite connection waits for a lock at a time (it blocks the thread meanwhile). */
const WAIT_MS = 2

const DayCount = Schema.Struct({ count: Schema.Number })
const BurstRow = Schema.Struct({ atMs: Schema.Number, count: Schema.Number })

/** The rows a batch adds: per account and UTC day, per account and millisecond. */
const aggregate = (batch: ReadonlyArray<CountedRequest>) => {
  const days = new Map<string, { accountId: string; day: string; count: number }>()
  const stamps = new Map<string, { accountId: string; atMs: number; count: number }>()
  const windows = new Map<string, number>()
  for (const item of batch) {
    const day = utcDay(item.at)
    const dayKey = `${item.accountId}\u0000${day}`
    const dayRow = days.get(dayKey)
    if (dayRow === undefined) days.set(dayKey, { accountId: item.accountId, day, count: 1 })
    else dayRow.count += 1
    const stampKey = `${item.accountId}\u0000${item.at}`
    const stampRow = stamps.get(stampKey)
    if (stampRow === undefined) stamps.set(stampKey, { accountId: item.accountId, atMs: item.at, count: 1 })
    else stampRow.count += 1
    windows.set(item.accountId, item.windowMs)
  }
  return { days: [...days.values()], stamps: [...stamps.values()], windows }
}

/** The accounts whose burst rows older than their window are due to be deleted (at most every 10 s each). */
const pruning = (lastPruned: Map<string, number>, windows: ReadonlyMap<string, number>, now: number) => {
  const prune: Array<{ accountId: string; before: number }> = []
  for (const [accountId, windowMs] of windows) {
    if ((lastPruned.get(accountId) ?? Number.NEGATIVE_INFINITY) + PRUNE_EVERY_MS <= now) {
      prune.push({ accountId, before: now - windowMs })
    }
  }
  return prune
}

const stored = (dayCount: number, monthCount: number, rows: ReadonlyArray<{ readonly atMs: number; readonly count: number }>) => {
  const burst: Array<number> = []
  for (const row of rows) for (let i = 0; i < row.count; i++) burst.push(row.atMs)
  return { dayCount, monthCount, burst } satisfies StoredUsage
}

/** Counters through the service's `SqlClient`, statement by statement (any dialect; PostgreSQL locks the day rows). */
export const UsageStoreSql = Layer.effect(
  UsageStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const lastPruned = new Map<string, number>()

    const busyOrDie = <A, R>(effect: Effect.Effect<A, unknown, R>) =>
      Effect.catchAll(effect, (error) =>
        // No pooled connection came free: the limiter answers it as such (src/Quota/RateLimiter.ts).
        isDatabaseUnavailable(error) && !isPgPoolExhausted(error) ? Effect.fail(busy()) : Effect.die(error))

    const dayCount = SqlSchema.findOne({
      Request: Schema.Struct({ accountId: Schema.String, day: Schema.String }),
      Result: DayCount,
      execute: ({ accountId, day }) =>
        sql`SELECT count FROM usage_daily WHERE account_id = ${accountId} AND day = ${day}`
    })
    const monthCount = SqlSchema.single({
      Request: Schema.Struct({ accountId: Schema.String, month: Schema.String }),
      Result: DayCount,
      execute: ({ accountId, month }) =>
        sql`SELECT COALESCE(SUM(count), 0) AS count FROM usage_daily
            WHERE account_id = ${accountId} AND day >= ${`${month}-01`} AND day <= ${`${month}-31`}`
    })
    const burstRows = SqlSchema.findAll({
      Request: Schema.Struct({ accountId: Schema.String, after: Schema.Number }),
      Result: BurstRow,
      execute: ({ accountId, after }) =>
        sql`SELECT at_ms, count FROM usage_burst WHERE account_id = ${accountId} AND at_ms > ${after} ORDER BY at_ms`
    })
    const burstCount = SqlSchema.single({
      Request: Schema.Struct({ accountId: Schema.String, after: Schema.Number }),
      Result: DayCount,
      execute: ({ accountId, after }) =>
        sql`SELECT COALESCE(SUM(count), 0) AS count FROM usage_burst WHERE account_id = ${accountId} AND at_ms > ${after}`
    })
    // A write, so that the row stays locked until commit (PostgreSQL); on SQLite the transaction
    // already holds the database's write lock.
    const lockDay = SqlSchema.single({
      Request: Schema.Struct({ accountId: Schema.String, day: Schema.String }),
      Result: DayCount,
      execute: ({ accountId, day }) =>
        sql`INSERT INTO usage_daily (account_id, day, count) VALUES (${accountId}, ${day}, 0)
            ON CONFLICT (account_id, day) DO UPDATE SET count = usage_daily.count
            RETURNING count`
    })

    const loadRows = (accountId: string, now: number, windowMs: number) =>
      Effect.gen(function*() {
        const today = yield* dayCount({ accountId, day: utcDay(now) })
        const thisMonth = yield* monthCount({ accountId, month: utcMonth(now) })
        const rows = yield* burstRows({ accountId, after: now - windowMs })
        return stored(today._tag === "Some" ? today.value.count : 0, thisMonth.count, rows)
      })

    const todayCount = (accountId: string, now: number) =>
      Effect.map(dayCount({ accountId, day: utcDay(now) }), (row) => row._tag === "Some" ? row.value.count : 0)

    const counts = (accountId: string, now: number, windowMs: number) =>
      Effect.gen(function*() {
        const today = yield* todayCount(accountId, now)
        const thisMonth = yield* monthCount({ accountId, month: utcMonth(now) })
        const inBurst = yield* burstCount({ accountId, after: now - windowMs })
        return { today, thisMonth: thisMonth.count, inBurst: inBurst.count } satisfies UsageCounts
      }).pipe(busyOrDie, Effect.withSpan("UsageStore.counts"))

    const settle = (now: number, accounts: ReadonlyArray<BatchAccount>, decider: Decider) =>
      Effect.gen(function*() {
        const reloaded = new Map<string, StoredUsage>()
        // Rows are locked in one order in every process: two batches holding the same counters
        // (an address's and a survey's) in opposite orders would otherwise deadlock.
        const inLockOrder = [...accounts].sort((x, y) => (x.accountId < y.accountId ? -1 : x.accountId > y.accountId ? 1 : 0))
        for (const { accountId, windowMs } of inLockOrder) {
          const locked = yield* lockDay({ accountId, day: utcDay(now) })
          if (!decider.current(accountId, locked.count)) reloaded.set(accountId, yield* loadRows(accountId, now, windowMs))
        }
        const { days, stamps, windows } = aggregate(decider.decide(reloaded))
        const prune = pruning(lastPruned, windows, now)
        if (days.length > 0) {
          yield* sql`INSERT INTO usage_daily ${sql.insert(days)}
            ON CONFLICT (account_id, day) DO UPDATE SET count = usage_daily.count + excluded.count`
          yield* sql`INSERT INTO usage_burst ${sql.insert(stamps)}
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

    return UsageStore.of({ dayCount: (accountId, now) => busyOrDie(todayCount(accountId, now)), counts, settle, forget })
  })
)

/**
 * Counters in the quota file beside the SQLite file (src/Quota/QuotaFile.ts), so that the quota's
 * commits neither take the main file's write lock nor drop its readers' cached pages, through a
 * connection of the limiter's own, whose transaction runs
 * start to end in one synchronous call: prepared statements without the client's per-statement
 * machinery (50–150 µs each on this stack, where these cost a few), and no other fiber of this
 * process can find the write lock held halfway. SQLite waits for a lock by blocking the process's
 * only thread, so this connection waits at most 2 ms at a time and then lets the process's other
 * fibers run (one of them may hold the lock) before it tries again, until the busy timeout is spent.
 */
const sqliteFileStore = (databasePath: string, busyTimeoutMs: number) =>
  Effect.gen(function*() {
    const { db, existed } = yield* Effect.acquireRelease(
      Effect.sync(() => openQuotaFile(databasePath, busyTimeoutMs)),
      ({ db }) => Effect.sync(() => db.close())
    )
    if (!existed) {
      // Migration 0013 created the file: it went missing since (deleted, or the main file was
      // restored or copied without it).
      yield* Effect.logWarning(
        `The request quota file ${quotaFilePath(databasePath)} was missing and was created anew: ` +
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
    db.exec(`PRAGMA busy_timeout = ${WAIT_MS}`)
    const lastPruned = new Map<string, number>()
    const dayCount = db.query("SELECT count FROM usage_daily WHERE account_id = ? AND day = ?")
    const monthCount = db.query(
      "SELECT COALESCE(SUM(count), 0) FROM usage_daily WHERE account_id = ? AND day >= ? AND day <= ?"
    )
    const burstRows = db.query("SELECT at_ms, count FROM usage_burst WHERE account_id = ? AND at_ms > ? ORDER BY at_ms")
    const allCounts = db.query(`SELECT
        (SELECT count FROM usage_daily WHERE account_id = ?1 AND day = ?2),
        (SELECT COALESCE(SUM(count), 0) FROM usage_daily WHERE account_id = ?1 AND day >= ?3 AND day <= ?4),
        (SELECT COALESCE(SUM(count), 0) FROM usage_burst WHERE account_id = ?1 AND at_ms > ?5)`)
    const lockDay = db.query(`INSERT INTO usage_daily (account_id, day, count) VALUES (?, ?, 0)
      ON CONFLICT (account_id, day) DO UPDATE SET count = usage_daily.count RETURNING count`)
    const addDay = db.query(addDailySql)
    const addStamp = db.query(addBurstSql)
    const pruneStamps = db.query("DELETE FROM usage_burst WHERE account_id = ? AND at_ms <= ?")
    const forgetDays = db.query("DELETE FROM usage_daily WHERE account_id LIKE ? AND day < ?")
    const forgetStamps = db.query("DELETE FROM usage_burst WHERE account_id LIKE ? AND at_ms <= ?")

    const loadNow = (accountId: string, now: number, windowMs: number): StoredUsage => {
      const month = utcMonth(now)
      const today = dayCount.values(accountId, utcDay(now))[0]
      const thisMonth = monthCount.values(accountId, `${month}-01`, `${month}-31`)[0] ?? []
      const rows = burstRows.values(accountId, now - windowMs).map((row) => ({
        atMs: num(row, 0, "at_ms"),
        count: num(row, 1, "count")
      }))
      return stored(today === undefined ? 0 : num(today, 0, "count"), num(thisMonth, 0, "count"), rows)
    }

    const settleNow = (now: number, accounts: ReadonlyArray<BatchAccount>, decider: Decider) => {
      db.exec("BEGIN IMMEDIATE")
      try {
        const reloaded = new Map<string, StoredUsage>()
        for (const { accountId, windowMs } of accounts) {
          const locked = num(lockDay.values(accountId, utcDay(now))[0] ?? [], 0, "count")
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

    const tries = Math.ceil(Math.max(0, busyTimeoutMs) / WAIT_MS) + 1
    /**
     * `run` now; when the file is locked, again after the other fibers had their turn, until the
     * busy timeout is spent. BUSY can only come from reading or from BEGIN IMMEDIATE (the lock is
     * then ours until COMMIT): nothing was written.
     */
    const withRetries = <A>(run: () => A): Effect.Effect<A, ServiceUnavailable> => {
      let left = tries
      const attempt: Effect.Effect<A, ServiceUnavailable> = Effect.suspend(() => {
        try {
          return Effect.succeed(run())
        } catch (error) {
          if (!isSqliteBusy(error)) return Effect.die(error)
          return --left > 0 ? Effect.zipRight(Effect.yieldNow(), attempt) : Effect.fail(busy())
        }
      })
      return attempt
    }

    const dayCountNow = (accountId: string, now: number) => {
      const row = dayCount.values(accountId, utcDay(now))[0]
      return row === undefined ? 0 : num(row, 0, "count")
    }

    const countsNow = (accountId: string, now: number, windowMs: number): UsageCounts => {
      const month = utcMonth(now)
      const row = allCounts.values(accountId, utcDay(now), `${month}-01`, `${month}-31`, now - windowMs)[0] ?? []
      return {
        today: nullableNum(row, 0, "today") ?? 0,
        thisMonth: num(row, 1, "this_month"),
        inBurst: num(row, 2, "in_burst")
      }
    }

    // On every request's path (one call per batch): no span of its own.
    const settle = (now: number, accounts: ReadonlyArray<BatchAccount>, decider: Decider) =>
      withRetries(() => settleNow(now, accounts, decider))

    return UsageStore.of({
      dayCount: (accountId, now) => withRetries(() => dayCountNow(accountId, now)),
      counts: (accountId, now, windowMs) => withRetries(() => countsNow(accountId, now, windowMs)),
      settle,
      forget: (prefix, now, burstBefore) =>
        withRetries(() =>
          forgetDays.run(`${prefix}%`, utcDay(now)).changes + forgetStamps.run(`${prefix}%`, burstBefore).changes
        )
    })
  })

/**
 * The counters: on a SQLite file in the quota file beside it, through the limiter's own connection
 * (at start it takes over what an earlier version counted in the main file since, see
 * src/Quota/TakeOver.ts); on PostgreSQL and in an in-memory SQLite database (one connection, no
 * other reader to disturb) in the service's database, through the service's client.
 */
export const UsageStoreLive = Layer.unwrapScoped(
  Effect.gen(function*() {
    const config = yield* AppConfig
    const sql = yield* SqlClient.SqlClient
    if (dialectOf(sql) !== "sqlite") return UsageStoreSql
    const path = yield* Effect.orDie(mainFilePath)
    if (path === undefined) return UsageStoreSql
    const store = yield* sqliteFileStore(path, config.sqliteBusyTimeoutMs ?? 5000)
    return Layer.succeed(UsageStore, store)
  })
)

/** Counters in process memory, for tests that need no database; lost when the process ends. */
export const UsageStoreMemory = Layer.sync(UsageStore, () => {
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
})
