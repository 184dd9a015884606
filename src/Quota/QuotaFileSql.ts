import { Database } from "bun:sqlite"
import { existsSync } from "node:fs"
import { column, rowShape, type RowOf } from "../Sql/Rows.js"
import { utcMonth } from "./Calendar.js"

/**
 * On SQLite the request quota's counters live in a database file of their own beside the
 * service's file: `<DATABASE_PATH>-quota` (with its own `-wal` and `-shm` while open). Every
 * admitted request is committed there before it is answered; a commit to the main file would
 * take its one write lock and drop the cached pages of every other connection on it (the
 * request-path reader's among them), so the quota's commits stay out of it.
 *
 * The file holds the same `usage_daily` and `usage_burst` tables as the main file had (migration
 * 0006), and `taken_over_daily` / `taken_over_burst`: how much of each row of the main file's
 * usage tables has been added here (see `takeOver`). This module imports nothing of Effect, so the
 * raw read benchmark's baseline uses it too; the store over it is src/Quota/QuotaFileStore.ts.
 */
export const quotaFilePath = (databasePath: string): string => `${databasePath}-quota`

/** The quota file's layout version (`PRAGMA user_version`). */
const LAYOUT = 1

const layout = [
  `CREATE TABLE IF NOT EXISTS usage_daily (
    account_id TEXT NOT NULL,
    day TEXT NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (account_id, day)
  ) WITHOUT ROWID`,
  `CREATE TABLE IF NOT EXISTS usage_burst (
    account_id TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (account_id, at_ms)
  ) WITHOUT ROWID`,
  `CREATE TABLE IF NOT EXISTS taken_over_daily (
    account_id TEXT NOT NULL,
    day TEXT NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (account_id, day)
  ) WITHOUT ROWID`,
  `CREATE TABLE IF NOT EXISTS taken_over_burst (
    account_id TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (account_id, at_ms)
  ) WITHOUT ROWID`
]

export interface QuotaFile {
  readonly db: Database
  /** False when this call created the file. */
  readonly existed: boolean
}

/** The counters of an in-memory database: in memory beside it, gone with the process as it is. */
export const openQuotaMemory = (): Database => {
  const db = new Database(":memory:")
  for (const statement of layout) db.exec(statement)
  return db
}

/**
 * Opens the quota file of the database at `databasePath`, creating it (and its tables) when
 * missing. WAL, with `synchronous = NORMAL` as on the main file: an admitted request is in the
 * WAL before it is answered, and a process crash loses nothing. `busyTimeoutMs` bounds each wait
 * for another process's lock while the file is opened; the caller may set a shorter one after.
 */
export const openQuotaFile = (databasePath: string, busyTimeoutMs: number): QuotaFile => {
  const path = quotaFilePath(databasePath)
  const existed = existsSync(path)
  const db = new Database(path, { readwrite: true, create: true })
  try {
    db.exec(`PRAGMA busy_timeout = ${Math.max(0, Math.trunc(busyTimeoutMs))}`)
    db.exec("PRAGMA journal_mode = WAL")
    db.exec("PRAGMA synchronous = NORMAL")
    if (userVersion(db) < LAYOUT) {
      db.exec("BEGIN IMMEDIATE")
      try {
        for (const statement of layout) db.exec(statement)
        db.exec(`PRAGMA user_version = ${LAYOUT}`)
        db.exec("COMMIT")
      } catch (error) {
        if (db.inTransaction) db.exec("ROLLBACK")
        throw error
      }
    }
    return { db, existed }
  } catch (error) {
    db.close()
    throw error
  }
}

const UserVersion = rowShape({ userVersion: column.num("user_version") })

const userVersion = (db: Database): number => {
  const row = db.query("PRAGMA user_version").values()[0]
  return row === undefined ? 0 : UserVersion.at.userVersion(row)
}

/** Adds `count` requests to an account's UTC day: (account_id, day, count). */
export const addDailySql = `INSERT INTO usage_daily (account_id, day, count) VALUES (?, ?, ?)
  ON CONFLICT (account_id, day) DO UPDATE SET count = usage_daily.count + excluded.count`

/** Adds `count` requests to an account's millisecond of the burst window: (account_id, at_ms, count). */
export const addBurstSql = `INSERT INTO usage_burst (account_id, at_ms, count) VALUES (?, ?, ?)
  ON CONFLICT (account_id, at_ms) DO UPDATE SET count = usage_burst.count + excluded.count`

/**
 * The rows of the main file's usage tables a start looks at again: the days of the
 * previous and the current UTC month, the burst rows of the last day. Older rows matter to no
 * limit; a process of an earlier version writes only current ones.
 */
export const recentRows = (now: number) => {
  const month = new Date(Date.parse(`${utcMonth(now)}-01T00:00:00.000Z`))
  month.setUTCMonth(month.getUTCMonth() - 1)
  return { dailyFrom: `${utcMonth(month.getTime())}-01`, burstAfter: now - 86_400_000 }
}

/** A row of the main file's `usage_daily`: an account's count of a UTC day (`period`). */
export const DailyColumns = rowShape({
  accountId: column.text("account_id"),
  period: column.text("day"),
  count: column.num("count")
})
export type DailyRow = RowOf<typeof DailyColumns.fields>
/** A row of the main file's `usage_burst`: an account's count of an epoch millisecond (`period`). */
export const BurstColumns = rowShape({
  accountId: column.text("account_id"),
  period: column.num("at_ms"),
  count: column.num("count")
})
export type BurstRow = RowOf<typeof BurstColumns.fields>

/** A count as taken over (`taken_over_*`). */
const TakenCount = rowShape({ count: column.num("count") })

/** What one `takeOver` added to the quota file. */
export interface TakenOver {
  readonly daily: number
  readonly burst: number
}

/**
 * Adds to the quota file what the main file's usage tables counted beyond what was taken over
 * before, in one transaction of the quota file. The main file is only read, never changed:
 * `taken_over_*` remember each row's count as last taken over, and only the difference is added,
 * so taking the same rows over again (a second start, two processes starting together, a start
 * after a crash halfway) adds nothing twice; and counts that a process of an earlier version
 * still adds to the main file during a rolling restart are taken over at a later start.
 * A row whose count is not above the one taken over adds nothing.
 *
 * `keepDailyFrom` / `keepBurstAfter`: the records of rows older than these are deleted afterwards
 * (the caller reads no older rows of the main file again).
 */
export const takeOver = (
  db: Database,
  rows: { readonly daily: ReadonlyArray<DailyRow>; readonly burst: ReadonlyArray<BurstRow> },
  keep: { readonly keepDailyFrom: string; readonly keepBurstAfter: number }
): TakenOver => {
  db.exec("BEGIN IMMEDIATE")
  try {
    const daily = takeOverRows(db, "usage_daily", "day", rows.daily)
    const burst = takeOverRows(db, "usage_burst", "at_ms", rows.burst)
    db.query("DELETE FROM taken_over_daily WHERE day < ?").run(keep.keepDailyFrom)
    db.query("DELETE FROM taken_over_burst WHERE at_ms <= ?").run(keep.keepBurstAfter)
    db.exec("COMMIT")
    return { daily, burst }
  } catch (error) {
    if (db.inTransaction) db.exec("ROLLBACK")
    throw error
  }
}

/** One table's part of `takeOver`: the requests it added. */
const takeOverRows = (
  db: Database,
  table: "usage_daily" | "usage_burst",
  period: "day" | "at_ms",
  rows: ReadonlyArray<DailyRow | BurstRow>
): number => {
  const ledger = table === "usage_daily" ? "taken_over_daily" : "taken_over_burst"
  const taken = db.query(`SELECT ${TakenCount.columns} FROM ${ledger} WHERE account_id = ? AND ${period} = ?`)
  const record = db.query(`INSERT INTO ${ledger} (account_id, ${period}, count) VALUES (?, ?, ?)
    ON CONFLICT (account_id, ${period}) DO UPDATE SET count = excluded.count`)
  const add = db.query(table === "usage_daily" ? addDailySql : addBurstSql)
  let added = 0
  for (const { accountId, count, period: at } of rows) {
    const before = taken.values(accountId, at)[0]
    const more = count - (before === undefined ? 0 : TakenCount.at.count(before))
    if (more <= 0) continue
    add.run(accountId, at, more)
    record.run(accountId, at, count)
    added += more
  }
  return added
}
