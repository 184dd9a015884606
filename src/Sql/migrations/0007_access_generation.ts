import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** The tables a key lookup reads (src/Auth/KeyLookupSql.ts). */
const accessTables = ["plans", "accounts", "workspaces", "members", "api_keys"] as const

/**
 * A counter that every write to the tables behind a key lookup moves, whoever writes (this
 * service, the operator CLI, a second process, a hand edit through `sqlite3`): triggers keep it.
 * A remembered lookup is used only while the counter has not moved since it was read.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE access_generation (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    value INTEGER NOT NULL
  )`
  yield* sql`INSERT INTO access_generation (id, value) VALUES (1, 0)`
  for (const table of accessTables) {
    for (const event of ["INSERT", "UPDATE", "DELETE"] as const) {
      yield* sql.unsafe(`CREATE TRIGGER access_changed_${table}_${event.toLowerCase()} AFTER ${event} ON ${table}
        BEGIN UPDATE access_generation SET value = value + 1 WHERE id = 1; END`)
    }
  }
})
