import { Migrator, SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { SqliteClient } from "@effect/sql-sqlite-bun"
import { Effect, Layer, Redacted } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { pgClientOptions } from "../../src/Sql/Postgres.js"
import { migrations } from "../../src/Sql/Migrations.js"
import { postgresDatabase, testDatabase } from "./TestServer.js"

/** Runs the migrations whose ids sort up to `last` ("0008_~": everything before 0009). */
export const migrateUpTo = (last: string) =>
  Migrator.make({})({
    loader: Migrator.fromRecord(Object.fromEntries(Object.entries(migrations).filter(([id]) => id <= last))),
    table: "schema_migrations"
  })

/**
 * Runs `body` on a bare database of its own, removed when the scope closes: for tests of a
 * migration over data written before it. On SQLite a file (foreign keys on, no migration run
 * yet); on the PostgreSQL pass an empty database of the test cluster. Rows come back with their
 * column names as stored on both.
 */
export const withBareDatabase = <A, E>(prefix: string, body: Effect.Effect<A, E, SqlClient.SqlClient>) =>
  Effect.gen(function*() {
    if (testDatabase === "postgres") {
      const url = yield* postgresDatabase(undefined, { migrated: false })
      const client = PgClient.layerFromPool({
        ...pgClientOptions(Redacted.make(url)),
        transformQueryNames: undefined,
        transformResultNames: undefined
      })
      return yield* body.pipe(Effect.provide(Layer.fresh(client)))
    }
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
