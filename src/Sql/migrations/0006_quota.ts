import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { ddlOf } from "../Ddl.js"

/**
 * Request quota counters per account (the key's creator).
 * `usage_daily` holds one row per UTC day; a month is the sum of its days.
 * `usage_burst` holds the requests of the sliding burst window, counted per millisecond,
 * so that the window is exact after a restart; rows older than the window are pruned.
 */
export default Effect.gen(function*() {
  const ddl = ddlOf(yield* SqlClient.SqlClient)
  yield* ddl`CREATE TABLE usage_daily (
    account_id TEXT NOT NULL,
    day TEXT NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (account_id, day)
  ) WITHOUT ROWID`
  yield* ddl`CREATE TABLE usage_burst (
    account_id TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (account_id, at_ms)
  ) WITHOUT ROWID`
})
