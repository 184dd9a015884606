import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { ddlOf } from "../Ddl.js"
import { dialectOf } from "../Dialect.js"

/** The tables a key lookup reads (src/Auth/KeyLookupSql.ts). */
const accessTables = ["plans", "accounts", "workspaces", "members", "api_keys"] as const

/**
 * A counter that every write to the tables behind a key lookup moves, whoever writes (this
 * service, the operator CLI, a second process, a hand edit through `sqlite3`): triggers keep it.
 * A remembered lookup is used only while the counter has not moved since it was read.
 * On PostgreSQL one trigger function serves every table, fired once per statement.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const ddl = ddlOf(sql)
  yield* ddl`CREATE TABLE access_generation (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    value INTEGER NOT NULL
  )`
  yield* ddl`INSERT INTO access_generation (id, value) VALUES (1, 0)`
  if (dialectOf(sql) === "pg") {
    yield* sql.unsafe(`CREATE FUNCTION access_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN UPDATE access_generation SET value = value + 1 WHERE id = 1; RETURN NULL; END $$`)
    for (const table of accessTables) {
      yield* sql.unsafe(`CREATE TRIGGER access_changed_${table} AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
        ON ${table} FOR EACH STATEMENT EXECUTE FUNCTION access_changed()`)
    }
    return
  }
  for (const table of accessTables) {
    for (const event of ["INSERT", "UPDATE", "DELETE"] as const) {
      yield* sql.unsafe(`CREATE TRIGGER access_changed_${table}_${event.toLowerCase()} AFTER ${event} ON ${table}
        BEGIN UPDATE access_generation SET value = value + 1 WHERE id = 1; END`)
    }
  }
})
