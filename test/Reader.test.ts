import { expect, layer, type Vitest } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Deferred, Effect, Either, Fiber, Queue } from "effect"
import { isDatabaseUnavailable, isStalePlan } from "../src/Sql/Busy.js"
import { placeholders, Reader } from "../src/Sql/Reader.js"
import { TestDatabase, testDatabase } from "./support/TestServer.js"

const probeIds = Effect.gen(function*() {
  const reader = yield* Reader
  const rows = yield* reader.values("SELECT id FROM probe ORDER BY id", []).pipe(Effect.orDie)
  return rows.map((row) => row[0])
})

const freshProbe = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DROP TABLE IF EXISTS probe`.pipe(Effect.orDie)
  yield* sql`CREATE TABLE probe (id TEXT PRIMARY KEY)`.pipe(Effect.orDie)
  return sql
})

/** The probe table with a number column, and a row whose number is 7. */
const numberProbe = Effect.gen(function*() {
  const sql = yield* freshProbe
  yield* sql`ALTER TABLE probe ADD COLUMN n INTEGER`.pipe(Effect.orDie)
  yield* sql`INSERT INTO probe (id, n) VALUES ('a', 7)`.pipe(Effect.orDie)
  return sql
})

/**
 * A transaction on the shared connection that has inserted a row and stays open until the
 * returned effect commits it or rolls it back.
 */
const pendingRow = (id: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const inserted = yield* Deferred.make<void>()
    const release = yield* Deferred.make<"commit" | "rollback">()
    const writer = yield* Effect.fork(
      sql.withTransaction(Effect.gen(function*() {
        yield* sql`INSERT INTO probe (id) VALUES (${id})`
        yield* Deferred.succeed(inserted, undefined)
        if ((yield* Deferred.await(release)) === "rollback") return yield* Effect.fail("rolled back" as const)
      })).pipe(Effect.catchTag("SqlError", Effect.die), Effect.either)
    )
    yield* Deferred.await(inserted)
    return (outcome: "commit" | "rollback") => Effect.zipRight(Deferred.succeed(release, outcome), Fiber.join(writer))
  })

const common = (it: Vitest.MethodsNonLive<Reader | SqlClient.SqlClient>) => {
  it.effect("sees what the shared connection committed, at once", () =>
    Effect.gen(function*() {
      const sql = yield* freshProbe
      expect(yield* probeIds).toEqual([])
      yield* sql`INSERT INTO probe (id) VALUES ('a')`.pipe(Effect.orDie)
      expect(yield* probeIds).toEqual(["a"])
      yield* sql`DELETE FROM probe WHERE id = 'a'`.pipe(Effect.orDie)
      expect(yield* probeIds).toEqual([])
    }))

  it.effect("an IN list over no values matches nothing, over some values those", () =>
    Effect.gen(function*() {
      const sql = yield* freshProbe
      yield* sql`INSERT INTO probe (id) VALUES ('a'), ('b'), ('c')`.pipe(Effect.orDie)
      const reader = yield* Reader
      const ids = (values: ReadonlyArray<string>) =>
        Effect.map(
          reader.values(`SELECT id FROM probe WHERE id IN ${placeholders(values.length)} ORDER BY id`, values),
          (rows) => rows.map((row) => row[0])
        ).pipe(Effect.orDie)
      expect(yield* ids([])).toEqual([])
      expect(yield* ids(["c", "a", "z"])).toEqual(["a", "c"])
    }))

  it.effect("inside a transaction, reads the transaction's own uncommitted writes", () =>
    Effect.gen(function*() {
      const sql = yield* freshProbe
      const seen = yield* sql.withTransaction(Effect.gen(function*() {
        yield* sql`INSERT INTO probe (id) VALUES ('mine')`
        return yield* probeIds
      })).pipe(Effect.orDie)
      expect(seen).toEqual(["mine"])
    }))

  it.effect("never returns another fiber's uncommitted writes", () =>
    Effect.gen(function*() {
      yield* freshProbe
      const finish = yield* pendingRow("pending")
      // Whether the read runs at once (a connection of its own) or waits for the transaction (the
      // one connection of an in-memory database), the row it must never see is then rolled back.
      const reading = yield* Effect.fork(probeIds)
      yield* finish("rollback")
      expect(yield* Fiber.join(reading)).toEqual([])
      expect(yield* probeIds).toEqual([])
    }))
}

layer(TestDatabase())("Reader on a database file", (it) => {
  common(it)

  // SQLite only: on PostgreSQL reads go through the pool (src/Sql/Reader.ts), where MVCC already
  // keeps them from waiting on a writer.
  it.effect.skipIf(testDatabase === "postgres")("reads on a connection of its own: not blocked by an open transaction, and read-only", () =>
    Effect.gen(function*() {
      yield* freshProbe
      const finish = yield* pendingRow("pending")
      // Answered while the transaction stays open: a read that waited for it would never return.
      expect(yield* probeIds).toEqual([])
      yield* finish("commit")

      const reader = yield* Reader
      const write = yield* Effect.either(reader.values("INSERT INTO probe (id) VALUES ('x')", []))
      expect(Either.isLeft(write)).toBe(true)
      expect(yield* probeIds).toEqual(["pending"])
    }))

  it.effect.skipIf(testDatabase !== "postgres")(
    "statements prepared on every connection, the reader's and the client's, read a column's new type after a migration changes it",
    () =>
      Effect.gen(function*() {
        const sql = yield* numberProbe
        const reader = yield* Reader
        const throughReader = Effect.map(reader.values("SELECT n FROM probe WHERE id = ?", ["a"]), (rows) => rows[0]?.[0])
        const throughClient = Effect.map(sql<{ n: unknown }>`SELECT n FROM probe WHERE id = ${"a"}`, (rows) => rows[0]?.n)
        // Ten reads at once take every connection of the pool; a text is prepared from its second run.
        const tenAtOnce = Effect.all(
          Array.from({ length: 10 }, () => Effect.all([throughReader, throughClient])),
          { concurrency: "unbounded" }
        ).pipe(Effect.orDie)
        yield* tenAtOnce
        expect(yield* tenAtOnce).toEqual(Array.from({ length: 10 }, () => [7, 7]))
        yield* sql`ALTER TABLE probe ALTER COLUMN n TYPE TEXT USING 'seven'`.pipe(Effect.orDie)
        expect(yield* tenAtOnce).toEqual(Array.from({ length: 10 }, () => ["seven", "seven"]))
      })
  )

  it.effect.skipIf(testDatabase !== "postgres")("a statement text sent a second time runs prepared, one sent once or as a string without parameters does not", () =>
    Effect.gen(function*() {
      const sql = yield* freshProbe
      // One transaction: one connection, whose prepared statements the server lists.
      const prepared = yield* sql.withTransaction(Effect.gen(function*() {
        yield* sql`SELECT id FROM probe WHERE id = ${"twice"}`
        yield* sql`SELECT id FROM probe WHERE id = ${"twice"}`
        yield* sql`SELECT id FROM probe WHERE id <> ${"once"}`
        // A read without parameters is prepared too; a statement text sent as a string without any is not.
        const reader = yield* Reader
        yield* reader.values("SELECT count(*) FROM probe", [])
        yield* reader.values("SELECT count(*) FROM probe", [])
        yield* sql.unsafe("SELECT max(id) FROM probe")
        yield* sql.unsafe("SELECT max(id) FROM probe")
        return yield* sql<{ statement: string }>`SELECT statement FROM pg_prepared_statements`
      })).pipe(Effect.orDie)
      const texts = prepared.map((row) => row.statement)
      expect(texts).toContain("SELECT id FROM probe WHERE id = $1")
      expect(texts).toContain("SELECT count(*) FROM probe")
      expect(texts).not.toContain("SELECT id FROM probe WHERE id <> $1")
      expect(texts).not.toContain("SELECT max(id) FROM probe")
    }))

  it.effect.skipIf(testDatabase !== "postgres")(
    "inside a transaction a stale prepared statement fails it as retryable, and the connection prepares it anew",
    () =>
      Effect.gen(function*() {
        const sql = yield* numberProbe
        const read = sql<{ n: unknown }>`SELECT n FROM probe WHERE id = ${"a"}`
        // Ten transactions open at once, so that each holds a connection of its own (the pool's ten).
        const tenTransactions = <A, E>(body: Effect.Effect<A, E>) =>
          Effect.gen(function*() {
            const ran = yield* Queue.unbounded<void>()
            const go = yield* Deferred.make<void>()
            const fibers = yield* Effect.forEach(Array.from({ length: 10 }), () =>
              Effect.fork(Effect.either(sql.withTransaction(
                Effect.ensuring(body, Effect.zipRight(Queue.offer(ran, undefined), Deferred.await(go)))
              ))))
            yield* Queue.takeN(ran, 10)
            yield* Deferred.succeed(go, undefined)
            return yield* Fiber.joinAll(fibers)
          })
        // The text may still be prepared with an earlier table's column type: a first round prepares
        // it anew where it went stale, a second must then read 7 on every connection.
        yield* tenTransactions(read)
        const before = yield* tenTransactions(read)
        expect(before.map((outcome) => Either.isRight(outcome) ? outcome.right[0]?.n : outcome.left)).toEqual(
          Array.from({ length: 10 }, () => 7)
        )
        yield* sql`ALTER TABLE probe ALTER COLUMN n TYPE TEXT USING 'seven'`.pipe(Effect.orDie)
        const stale = yield* tenTransactions(read)
        const failures = stale.filter(Either.isLeft).map((outcome) => outcome.left)
        expect(failures.length).toBeGreaterThan(0)
        for (const failure of failures) {
          expect(isStalePlan(failure)).toBe(true)
          expect(isDatabaseUnavailable(failure)).toBe(true)
        }
        const again = yield* tenTransactions(read)
        expect(again.map((outcome) => Either.isRight(outcome) ? outcome.right[0]?.n : outcome.left)).toEqual(
          Array.from({ length: 10 }, () => "seven")
        )
      })
  )

  it.effect.skipIf(testDatabase === "postgres")("a new database file is in WAL mode with 8 KiB pages", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      expect(yield* sql`PRAGMA page_size`.values.pipe(Effect.orDie)).toEqual([[8192]])
      expect(yield* sql`PRAGMA journal_mode`.values.pipe(Effect.orDie)).toEqual([["wal"]])
    }))
})

layer(TestDatabase(undefined, { databasePath: ":memory:" }))(
  "Reader on an in-memory database",
  (it) => {
    common(it)
  }
)
