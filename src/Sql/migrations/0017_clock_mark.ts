import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { ddlOf } from "../Ddl.js"

/**
 * The clock a database was first served on (v1-extensions §X5.1): one row, written by the first
 * `serve`, `simulated` under `--test-clock` and `real` otherwise. A process on the other clock
 * refuses the database, so that simulated instants never mix into real data.
 */
export default Effect.gen(function*() {
  const ddl = ddlOf(yield* SqlClient.SqlClient)
  yield* ddl`CREATE TABLE clock_mark (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    clock TEXT NOT NULL CHECK (clock IN ('simulated', 'real'))
  )`
})
