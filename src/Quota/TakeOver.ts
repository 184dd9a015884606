import { SqlClient } from "@effect/sql"
import type { Database } from "bun:sqlite"
import { Effect } from "effect"
import { num, text } from "../Sql/Rows.js"
import { utcMonth } from "./Calendar.js"
import { type BurstRow, type DailyRow, takeOver, type TakenOver } from "./QuotaFile.js"

/** The name SQLite gives the file of a connection's main database; undefined in memory. */
export const mainFilePath = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql.unsafe("PRAGMA database_list").values
  for (const row of rows) {
    if (row[1] === "main") {
      const file = row[2]
      return typeof file === "string" && file !== "" ? file : undefined
    }
  }
  return undefined
})

/**
 * The rows of the main file's usage tables a start looks at again (`since`): the days of the
 * previous and the current UTC month, the burst rows of the last day. Older rows matter to no
 * limit; a process of an earlier version writes only current ones.
 */
export const recentRows = (now: number) => {
  const month = new Date(Date.parse(`${utcMonth(now)}-01T00:00:00.000Z`))
  month.setUTCMonth(month.getUTCMonth() - 1)
  return { dailyFrom: `${utcMonth(month.getTime())}-01`, burstAfter: now - 86_400_000 }
}

/**
 * Takes the counts of the main file's `usage_daily` / `usage_burst` (read through the service's
 * client; every row when `everything`, else the recent ones) over into the quota file, adding only
 * what was not taken over before (`takeOver`).
 */
export const takeOverMainCounts = (quota: Database, now: number, everything: boolean) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const recent = recentRows(now)
    const dailyRows = yield* (everything
      ? sql`SELECT account_id, day, count FROM usage_daily`
      : sql`SELECT account_id, day, count FROM usage_daily WHERE day >= ${recent.dailyFrom}`).values
    const burstRows = yield* (everything
      ? sql`SELECT account_id, at_ms, count FROM usage_burst`
      : sql`SELECT account_id, at_ms, count FROM usage_burst WHERE at_ms > ${recent.burstAfter}`).values
    const daily = dailyRows.map((row): DailyRow => [text(row, 0, "account_id"), text(row, 1, "day"), num(row, 2, "count")])
    const burst = burstRows.map((row): BurstRow => [text(row, 0, "account_id"), num(row, 1, "at_ms"), num(row, 2, "count")])
    if (daily.length === 0 && burst.length === 0) return { daily: 0, burst: 0 } satisfies TakenOver
    return takeOver(quota, { daily, burst }, { keepDailyFrom: recent.dailyFrom, keepBurstAfter: recent.burstAfter })
  })
