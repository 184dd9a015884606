import { SqlClient } from "@effect/sql"
import { Database } from "bun:sqlite"
import { Clock, Effect, Schema } from "effect"
import { dialectOf } from "../Dialect.js"

/**
 * On a SQLite file, the request quota's counters move to a file of their own beside it
 * (`<file>-quota`): this creates that file and takes every count of `usage_daily` and
 * `usage_burst` over into it. The main file's tables are left as they are (read only): a process
 * of the previous version still serving during a rolling restart keeps writing them, and each
 * start of a later version takes over what they counted since, by the ledger this migration starts
 * (`taken_over_*`: each main-file row's count as last taken over). On PostgreSQL and in an
 * in-memory SQLite database the counters stay in those tables, and nothing changes.
 *
 * The quota file's layout 1 and the take-over are written out here as they were when this
 * migration was written; the service opens the file with its own, later layout.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  if (dialectOf(sql) !== "sqlite") return
  const path = yield* mainFilePath
  if (path === undefined) return
  const now = yield* Clock.currentTimeMillis
  const daily = yield* sql.unsafe("SELECT account_id, day, count FROM usage_daily").values.pipe(
    Effect.flatMap(Schema.decodeUnknown(Schema.Array(Schema.Tuple(Schema.String, Schema.String, Schema.Number))))
  )
  const burst = yield* sql.unsafe("SELECT account_id, at_ms, count FROM usage_burst").values.pipe(
    Effect.flatMap(Schema.decodeUnknown(Schema.Array(Schema.Tuple(Schema.String, Schema.Number, Schema.Number))))
  )
  yield* Effect.acquireUseRelease(
    Effect.sync(() => openLayout1(`${path}-quota`)),
    (quota) => Effect.sync(() => takeOver(quota, daily, burst, now)),
    (quota) => Effect.sync(() => quota.close())
  )
})

const mainFilePath = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql.unsafe("PRAGMA database_list").values
  for (const row of rows) {
    const file = row[2]
    if (row[1] === "main") return typeof file === "string" && file !== "" ? file : undefined
  }
  return undefined
})

const layout1 = [
  `CREATE TABLE IF NOT EXISTS usage_daily (
    account_id TEXT NOT NULL, day TEXT NOT NULL, count INTEGER NOT NULL,
    PRIMARY KEY (account_id, day)) WITHOUT ROWID`,
  `CREATE TABLE IF NOT EXISTS usage_burst (
    account_id TEXT NOT NULL, at_ms INTEGER NOT NULL, count INTEGER NOT NULL,
    PRIMARY KEY (account_id, at_ms)) WITHOUT ROWID`,
  `CREATE TABLE IF NOT EXISTS taken_over_daily (
    account_id TEXT NOT NULL, day TEXT NOT NULL, count INTEGER NOT NULL,
    PRIMARY KEY (account_id, day)) WITHOUT ROWID`,
  `CREATE TABLE IF NOT EXISTS taken_over_burst (
    account_id TEXT NOT NULL, at_ms INTEGER NOT NULL, count INTEGER NOT NULL,
    PRIMARY KEY (account_id, at_ms)) WITHOUT ROWID`
]

const UserVersion = Schema.Tuple(Schema.Number)

const openLayout1 = (path: string): Database => {
  const db = new Database(path, { readwrite: true, create: true })
  try {
    db.exec("PRAGMA busy_timeout = 5000")
    db.exec("PRAGMA journal_mode = WAL")
    db.exec("PRAGMA synchronous = NORMAL")
    const [version] = Schema.decodeUnknownSync(UserVersion)(db.query("PRAGMA user_version").values()[0])
    if (version < 1) {
      db.exec("BEGIN IMMEDIATE")
      try {
        for (const statement of layout1) db.exec(statement)
        db.exec("PRAGMA user_version = 1")
        db.exec("COMMIT")
      } catch (error) {
        if (db.inTransaction) db.exec("ROLLBACK")
        throw error
      }
    }
    return db
  } catch (error) {
    db.close()
    throw error
  }
}

/**
 * Adds each main-file row's count beyond what the ledger says was taken over, and records it; the
 * ledger keeps the rows a later start reads again (the days of the previous and the current UTC
 * month, the burst rows of the last day).
 */
const takeOver = (
  db: Database,
  daily: ReadonlyArray<readonly [string, string, number]>,
  burst: ReadonlyArray<readonly [string, number, number]>,
  now: number
) => {
  const month = new Date(Date.parse(`${new Date(now).toISOString().slice(0, 7)}-01T00:00:00.000Z`))
  month.setUTCMonth(month.getUTCMonth() - 1)
  const keepDailyFrom = `${month.toISOString().slice(0, 7)}-01`
  db.exec("BEGIN IMMEDIATE")
  try {
    takeOverRows(db, "usage_daily", "taken_over_daily", "day", daily)
    takeOverRows(db, "usage_burst", "taken_over_burst", "at_ms", burst)
    db.query("DELETE FROM taken_over_daily WHERE day < ?").run(keepDailyFrom)
    db.query("DELETE FROM taken_over_burst WHERE at_ms <= ?").run(now - 86_400_000)
    db.exec("COMMIT")
  } catch (error) {
    if (db.inTransaction) db.exec("ROLLBACK")
    throw error
  }
}

const Count = Schema.Tuple(Schema.Number)

const takeOverRows = (
  db: Database,
  table: "usage_daily" | "usage_burst",
  ledger: "taken_over_daily" | "taken_over_burst",
  period: "day" | "at_ms",
  rows: ReadonlyArray<readonly [string, string | number, number]>
) => {
  const taken = db.query(`SELECT count FROM ${ledger} WHERE account_id = ? AND ${period} = ?`)
  const record = db.query(`INSERT INTO ${ledger} (account_id, ${period}, count) VALUES (?, ?, ?)
    ON CONFLICT (account_id, ${period}) DO UPDATE SET count = excluded.count`)
  const add = db.query(`INSERT INTO ${table} (account_id, ${period}, count) VALUES (?, ?, ?)
    ON CONFLICT (account_id, ${period}) DO UPDATE SET count = ${table}.count + excluded.count`)
  for (const [accountId, at, count] of rows) {
    const before = taken.values(accountId, at)[0]
    const more = count - (before === undefined ? 0 : Schema.decodeUnknownSync(Count)(before)[0])
    if (more <= 0) continue
    add.run(accountId, at, more)
    record.run(accountId, at, count)
  }
}
