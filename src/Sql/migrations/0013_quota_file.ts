import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import { openQuotaFile } from "../../Quota/QuotaFile.js"
import { mainFilePath, takeOverMainCounts } from "../../Quota/TakeOver.js"
import { dialectOf } from "../Dialect.js"

/**
 * On a SQLite file, the request quota's counters move to a file of their own beside it
 * (`<file>-quota`, src/Quota/QuotaFile.ts): this creates that file and takes every count of
 * `usage_daily` and `usage_burst` over into it. The main file's tables are left as they are
 * (read only): a process of the previous version still serving during a rolling restart keeps
 * writing them, and each start of this version takes over what they counted since
 * (src/Quota/UsageStore.ts). On PostgreSQL and in an in-memory SQLite database the counters stay
 * in those tables, and nothing changes.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  if (dialectOf(sql) !== "sqlite") return
  const path = yield* mainFilePath
  if (path === undefined) return
  const now = yield* Clock.currentTimeMillis
  yield* Effect.acquireUseRelease(
    Effect.sync(() => openQuotaFile(path, 5000).db),
    (quota) => takeOverMainCounts(quota, now, true),
    (quota) => Effect.sync(() => quota.close())
  )
})
