import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-bun"
import { Database } from "bun:sqlite"
import { Context, Effect, Exit, Layer, Logger, Scope, TestClock } from "effect"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { ApiKeyContext } from "../src/Auth/CurrentKey.js"
import { WorkspaceId } from "../src/Domain/Ids.js"
import { quotaFilePath } from "../src/Quota/QuotaFileSql.js"
import { RateLimiter } from "../src/Quota/RateLimiter.js"
import { takeOverMainCounts } from "../src/Quota/QuotaFileStore.js"
import { migrateUpTo, withBareDatabase } from "./support/Migrations.js"
import { TestDatabase, testDatabase } from "./support/TestServer.js"

const rowsOf = (path: string, statement: string) => {
  const db = new Database(path, { readonly: true })
  try {
    return db.query(statement).values()
  } finally {
    db.close()
  }
}

const dailyRows = "SELECT account_id, day, count FROM usage_daily ORDER BY account_id, day"
const burstRows = "SELECT account_id, at_ms, count FROM usage_burst ORDER BY account_id, at_ms"

const keyOf = (accountId: string): ApiKeyContext => ({
  keyId: `key_${accountId}`,
  workspaceId: WorkspaceId.make("ws_file"),
  accountId,
  role: "owner",
  surveyIds: null,
  quota: { planId: "test", burstLimit: 100, burstWindowMinutes: 1, dailyLimit: 1000, monthlyLimit: 10_000 }
})

// The quota file exists on SQLite files only: PostgreSQL keeps the counters in its database.
describe.skipIf(testDatabase === "postgres")("the quota file beside a SQLite database", () => {
  it.scoped("migration 0013 takes every count of the main file's usage tables over; the main file keeps its rows", () =>
    withBareDatabase(
      "survey-0013-",
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* migrateUpTo("0012_~")
        yield* sql.unsafe(`INSERT INTO usage_daily (account_id, day, count) VALUES
          ('acc_a', '2025-12-31', 40), ('acc_a', '2026-07-01', 7), ('acc_b', '2026-07-01', 3)`)
        yield* sql.unsafe(`INSERT INTO usage_burst (account_id, at_ms, count) VALUES
          ('acc_a', ${Date.parse("2026-07-01T10:00:00.000Z")}, 2), ('acc_a', ${Date.parse("2026-07-01T10:00:00.500Z")}, 5)`)
        yield* TestClock.setTime(Date.parse("2026-07-01T10:00:30.000Z"))
        yield* migrateUpTo("9999")

        const file = (yield* sql.unsafe("PRAGMA database_list").values).find((row) => row[1] === "main")?.[2]
        if (typeof file !== "string") return yield* Effect.dieMessage("no main file")
        const quota = quotaFilePath(file)
        const before = { daily: rowsOf(file, dailyRows), burst: rowsOf(file, burstRows) }
        expect(rowsOf(quota, dailyRows)).toEqual(before.daily)
        expect(rowsOf(quota, burstRows)).toEqual(before.burst)
        expect(before.daily).toHaveLength(3)

        // Taken over again (a second start, two starts at once): nothing is added twice.
        const db = new Database(quota)
        try {
          const now = Date.parse("2026-07-01T10:00:40.000Z")
          expect(yield* takeOverMainCounts(db, now, false)).toEqual({ daily: 0, burst: 0 })
          // A process of the earlier version goes on counting into the main file: only that is added.
          yield* sql.unsafe(`UPDATE usage_daily SET count = 9 WHERE account_id = 'acc_a' AND day = '2026-07-01'`)
          yield* sql.unsafe(`INSERT INTO usage_daily (account_id, day, count) VALUES ('acc_c', '2026-07-01', 1)`)
          yield* sql.unsafe(`INSERT INTO usage_burst (account_id, at_ms, count) VALUES ('acc_a', ${now - 1000}, 1)`)
          expect(yield* takeOverMainCounts(db, now, false)).toEqual({ daily: 3, burst: 1 })
          expect(yield* takeOverMainCounts(db, now, false)).toEqual({ daily: 0, burst: 0 })
        } finally {
          db.close()
        }
        expect(rowsOf(quota, dailyRows)).toEqual([
          ["acc_a", "2025-12-31", 40],
          ["acc_a", "2026-07-01", 9],
          ["acc_b", "2026-07-01", 3],
          ["acc_c", "2026-07-01", 1]
        ])
        expect(rowsOf(quota, "SELECT SUM(count) FROM usage_burst")).toEqual([[8]])
        // The main file was only read.
        expect(rowsOf(file, "SELECT SUM(count) FROM usage_daily")).toEqual([[53]])
      })
    ))

  it.scoped("a service started on a database of the earlier version answers its counts, once; a lost quota file starts from zero with a warning", () =>
    Effect.gen(function*() {
      const dir = yield* Effect.acquireRelease(
        Effect.sync(() => mkdtempSync(join(tmpdir(), "quota-file-"))),
        (d) => Effect.sync(() => rmSync(d, { recursive: true, force: true }))
      )
      const file = join(dir, "survey.db")
      const now = Date.parse("2026-07-01T10:00:30.000Z")
      yield* TestClock.setTime(now)
      // A database of the earlier version, with counts in its usage tables.
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* migrateUpTo("0012_~")
        yield* sql.unsafe(`INSERT INTO usage_daily (account_id, day, count) VALUES ('acc_old', '2026-07-01', 4), ('acc_old', '2026-06-30', 6)`)
        yield* sql.unsafe(`INSERT INTO usage_burst (account_id, at_ms, count) VALUES ('acc_old', ${now - 10_000}, 4)`)
      }).pipe(Effect.provide(Layer.fresh(SqliteClient.layer({ filename: file }))), Effect.scoped)

      const warnings: Array<string> = []
      const collect = Logger.replace(
        Logger.defaultLogger,
        Logger.make(({ logLevel, message }) => {
          if (logLevel._tag === "Warning") warnings.push(String(message))
        })
      )
      const start = Effect.gen(function*() {
        const scope = yield* Scope.make()
        const context = yield* Layer.buildWithScope(
          RateLimiter.layer.pipe(Layer.provide(TestDatabase(undefined, { databasePath: file }))),
          scope
        )
        return { scope, limiter: Context.get(context, RateLimiter) }
      }).pipe(Effect.provide(collect))
      const key = keyOf("acc_old")

      const first = yield* start
      expect(yield* first.limiter.usage(key)).toMatchObject({ usedToday: 4, usedThisMonth: 4, usedInBurstWindow: 4 })
      yield* first.limiter.admit(key)
      yield* Scope.close(first.scope, Exit.void)
      expect(existsSync(quotaFilePath(file))).toBe(true)
      expect(warnings).toEqual([])

      // Started again: nothing taken over twice.
      const second = yield* start
      expect(yield* second.limiter.usage(key)).toMatchObject({ usedToday: 5, usedThisMonth: 5, usedInBurstWindow: 5 })
      yield* Scope.close(second.scope, Exit.void)

      // The quota file lost (the database restored without it): counting starts again, and says so.
      for (const suffix of ["", "-wal", "-shm"]) rmSync(quotaFilePath(file) + suffix, { force: true })
      const third = yield* start
      // The main file's old rows were taken over before; only their records went with the file, so
      // they count once more: the recent ones the earlier version wrote.
      const after = yield* third.limiter.usage(key)
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toContain(`${quotaFilePath(file)} was missing`)
      yield* Scope.close(third.scope, Exit.void)
      expect(after).toMatchObject({ usedToday: 4 })
    }))
})
