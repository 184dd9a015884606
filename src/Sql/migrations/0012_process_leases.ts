import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Several service processes on one database (v1-extensions §X3).
 * `job_leases`: one row per background job. `next_run_at` hands each period of a periodic job
 * (a purge, a sweep) to one process; `holder` and `lease_until` give a continuous job (the
 * aggregator) to one process at a time, taken over by another once the lease runs out.
 * `deliveries.lease_owner`: the process whose lease (`lease_until`) holds the delivery, so that it
 * renews and releases only its own.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE job_leases (
    name TEXT PRIMARY KEY,
    holder TEXT,
    lease_until BIGINT NOT NULL DEFAULT 0,
    next_run_at BIGINT NOT NULL DEFAULT 0
  )`
  yield* sql`ALTER TABLE deliveries ADD COLUMN lease_owner TEXT`
})
