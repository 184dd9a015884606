import { Migrator, SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-bun"
import { Effect, Layer } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { migrations } from "../../src/Sql/Migrations.js"

/** Runs the migrations whose ids sort up to `last` ("0008_~": everything before 0009). */
export const migrateUpTo = (last: string) =>
  Migrator.make({})({
    loader: Migrator.fromRecord(Object.fromEntries(Object.entries(migrations).filter(([id]) => id <= last))),
    table: "schema_migrations"
  })

/**
 * Runs `body` on a bare SQLite file of its own (foreign keys on, no migration run yet), removed
 * when the scope closes: for tests of a migration over data written before it.
 */
export const withBareDatabase = <A, E>(prefix: string, body: Effect.Effect<A, E, SqlClient.SqlClient>) =>
  Effect.gen(function*() {
    const dir = yield* Effect.acquireRelease(
      Effect.sync(() => mkdtempSync(join(tmpdir(), prefix))),
      (d) => Effect.sync(() => rmSync(d, { recursive: true, force: true }))
    )
    return yield* Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql.unsafe("PRAGMA foreign_keys = ON")
      return yield* body
    }).pipe(Effect.provide(Layer.fresh(SqliteClient.layer({ filename: join(dir, "survey.db") }))))
  })
