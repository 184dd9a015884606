import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"

/** A `count(*) AS n` row. */
export const Count = Schema.Struct({ n: Schema.Number })

/** What a survey's responses left in the database: row counts and the survey's `response_count`. */
export const StoredCounts = Schema.Struct({
  responses: Schema.Number,
  answers: Schema.Number,
  changes: Schema.Number,
  events: Schema.Number,
  responseCount: Schema.Number
})

const Table = Schema.Struct({ name: Schema.String })

/** Every row of every table of the database, as text, with the table it came from. */
export const everyRow = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const tables = Schema.decodeUnknownSync(Schema.Array(Table))(
    yield* sql.onDialectOrElse({
      pg: () => sql`SELECT table_name AS name FROM information_schema.tables
        WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`,
      orElse: () => sql`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`
    }).pipe(Effect.orDie)
  )
  const out: Array<{ table: string; row: string }> = []
  for (const { name } of tables) {
    const rows = yield* sql.unsafe(`SELECT * FROM "${name.replaceAll("\"", "\"\"")}"`).pipe(
      Effect.orDie
    )
    for (const row of rows) out.push({ table: name, row: JSON.stringify(row) })
  }
  return { tables: tables.map((t) => t.name), rows: out }
})
