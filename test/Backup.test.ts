import { describe, expect, it } from "@effect/vitest"
import { Database } from "bun:sqlite"
import { Effect, Fiber, Ref, Schema } from "effect"
import { existsSync, lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { quotaFilePath } from "../src/Quota/QuotaFileSql.js"
import { backupSqlite, openSource } from "../src/Sql/Backup.js"
import { clientAt, completeShortAt } from "./support/ApiClient.js"
import { TOKENS } from "./support/Fixtures.js"
import { respondentFixture } from "./support/RespondentFixtures.js"
import { polled, PROCESS_TEST_TIMEOUT, processEnv, request, serveProcess, sharedDatabase } from "./support/ServeProcess.js"
import { testDatabase } from "./support/TestServer.js"

const main = join(import.meta.dirname, "..", "src", "main.ts")

/** Runs `survey-service <args>` to its end, whatever its exit code. */
const run = (args: ReadonlyArray<string>, env: Readonly<Record<string, string | undefined>> = {}) =>
  Effect.promise(async () => {
    const proc = Bun.spawn(["bun", main, ...args], { env: { ...processEnv, ...env }, stdout: "pipe", stderr: "pipe" })
    const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
    return { code, stdout, stderr }
  })

const Ids = Schema.Array(Schema.Tuple(Schema.String))
const Single = Schema.Tuple(Schema.Number)

/** The single number a query over the copy answers. */
const single = (db: Database, text: string) => Schema.decodeUnknownSync(Single)(db.query(text).values()[0])[0]

// The copy of a live SQLite database; the PostgreSQL pass checks the refusal below.
describe.runIf(testDatabase === "sqlite")("backup FILE of a live SQLite database", () => {
  it.live("is intact and holds a prefix of the commits of a writer that kept committing while it ran", () =>
    Effect.gen(function*() {
      const db = yield* sharedDatabase(respondentFixture)
      const server = yield* serveProcess(db.flags, { RESPONDENT_LIMIT_PER_ADDRESS: "1000000", RESPONDENT_LIMIT_PER_SURVEY: "1000000" })
      // A request with a key writes the quota file too.
      yield* Effect.flatMap(clientAt(server.base, TOKENS.editor), (api) => api.surveys.list({ urlParams: {} }))

      const committed = yield* Ref.make<ReadonlyArray<string>>([])
      const writer = yield* Effect.fork(Effect.forever(
        Effect.flatMap(completeShortAt(server.base), (id) => Ref.update(committed, (ids) => [...ids, id]))
      ))
      yield* polled("the writer's first commits", Ref.get(committed), (ids) => ids.length >= 10)

      const file = join(db.dir, "backup.db")
      const before = (yield* Ref.get(committed)).length
      const backup = yield* run(["backup", file, ...db.flags])
      const after = (yield* Ref.get(committed)).length
      yield* Fiber.interrupt(writer)
      expect(backup.stderr).toBe("")
      expect(backup.code).toBe(0)
      expect(backup.stdout).toContain(`Wrote ${file} (`)
      expect(backup.stdout).toContain(`Wrote ${file}-quota (`)
      expect(backup.stdout).toMatch(/Backup done in \d+ ms\./)
      // The writer went on committing while the backup ran.
      expect(after).toBeGreaterThan(before)

      const copy = new Database(file, { readonly: true })
      try {
        expect(copy.query("PRAGMA integrity_check").values()).toEqual([["ok"]])
        const inCopy = Schema.decodeUnknownSync(Ids)(
          copy.query("SELECT id FROM responses WHERE survey_id = 'srv_short' ORDER BY created_at, id").values()
        ).map(([id]) => id)
        const ids = yield* Ref.get(committed)
        // Every commit up to some instant, none after: the writer's commits are in order.
        expect(inCopy.length).toBeGreaterThanOrEqual(before)
        expect(inCopy.length).toBeLessThanOrEqual(after)
        expect(new Set(inCopy)).toEqual(new Set(ids.slice(0, inCopy.length)))
        // Every response with its answer and its events; every event with its response.
        expect(single(copy, `SELECT COUNT(*) FROM responses r WHERE r.survey_id = 'srv_short'
          AND NOT EXISTS (SELECT 1 FROM answers a WHERE a.response_id = r.id)`)).toBe(0)
        expect(single(copy, `SELECT COUNT(*) FROM responses r WHERE r.survey_id = 'srv_short'
          AND NOT EXISTS (SELECT 1 FROM events e WHERE e.response_id = r.id AND e.type = 'response.completed')`)).toBe(0)
        expect(single(copy, `SELECT COUNT(*) FROM events e WHERE e.response_id IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM responses r WHERE r.id = e.response_id)`)).toBe(0)
      } finally {
        copy.close()
      }
      const quota = new Database(`${file}-quota`, { readonly: true })
      try {
        expect(quota.query("PRAGMA integrity_check").values()).toEqual([["ok"]])
        expect(single(quota, "SELECT COUNT(*) FROM usage_daily")).toBeGreaterThan(0)
      } finally {
        quota.close()
      }

      // The copy serves: a process over it is ready.
      const restored = yield* serveProcess(["--db", file])
      expect(yield* request(`${restored.base}/readyz`)).toMatchObject({ status: 200, text: `{"status":"ready"}` })
    }).pipe(Effect.scoped), PROCESS_TEST_TIMEOUT)

  it.live("refuses a FILE that exists, and leaves it as it was", () =>
    Effect.gen(function*() {
      const db = yield* sharedDatabase(respondentFixture)
      const file = join(db.dir, "taken.db")
      writeFileSync(file, "something else")
      const refused = yield* run(["backup", file, ...db.flags])
      expect(refused.code).toBe(1)
      expect(refused.stderr.trim()).toBe(`error: ${file} already exists; a backup never overwrites a file`)
      expect(yield* Effect.promise(() => Bun.file(file).text())).toBe("something else")
      expect(existsSync(`${file}-quota`)).toBe(false)
    }).pipe(Effect.scoped), PROCESS_TEST_TIMEOUT)
})

describe("backup FILE with DATABASE_URL", () => {
  it.live("refuses with one line naming pg_dump, and writes nothing", () =>
    Effect.gen(function*() {
      const db = yield* sharedDatabase(respondentFixture)
      const file = join(db.dir, "never.db")
      const refused = yield* run(["backup", file], { DATABASE_URL: "postgres://service@127.0.0.1:1/survey" })
      expect(refused.code).toBe(1)
      const lines = refused.stderr.trim().split("\n")
      expect(lines).toHaveLength(1)
      expect(lines[0]).toContain("pg_dump")
      expect(existsSync(file)).toBe(false)
    }).pipe(Effect.scoped), PROCESS_TEST_TIMEOUT)
})

/** A small SQLite database in WAL mode with a quota file beside it, as a served database has; its directory. */
const smallDatabase = Effect.acquireRelease(
  Effect.sync(() => {
    const dir = mkdtempSync(join(tmpdir(), "backup-files-"))
    for (const path of [join(dir, "survey.db"), quotaFilePath(join(dir, "survey.db"))]) {
      const db = new Database(path, { create: true })
      db.exec("PRAGMA journal_mode = WAL; CREATE TABLE secrets (value TEXT); INSERT INTO secrets VALUES ('whsec_x')")
      db.close()
    }
    return dir
  }),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

describe.runIf(testDatabase === "sqlite")("backup FILE's files", () => {
  it.effect("are created with mode 0600, and nothing else is left in the directory", () =>
    Effect.gen(function*() {
      const dir = yield* smallDatabase
      const file = join(dir, "copy.db")
      const report = yield* backupSqlite(join(dir, "survey.db"), file, 1000)
      expect(report.copies.map((c) => c.to)).toEqual([file, `${file}-quota`])
      for (const path of [file, `${file}-quota`]) expect(statSync(path).mode & 0o777).toBe(0o600)
      expect(readdirSync(dir).filter((name) => !name.startsWith("survey.db")).sort()).toEqual(["copy.db", "copy.db-quota"])
    }).pipe(Effect.scoped))

  it.effect("refuse a symbolic link at FILE or FILE-quota, a dangling one too, and write nothing through it", () =>
    Effect.gen(function*() {
      const dir = yield* smallDatabase
      const source = join(dir, "survey.db")
      const elsewhere = join(dir, "elsewhere.db")
      const dangling = join(dir, "dangling.db")
      symlinkSync(elsewhere, dangling)
      const refused = yield* Effect.flip(backupSqlite(source, dangling, 1000))
      expect(refused.message).toBe(`${dangling} already exists; a backup never overwrites a file`)
      expect(existsSync(elsewhere)).toBe(false)
      expect(lstatSync(dangling).isSymbolicLink()).toBe(true)

      writeFileSync(elsewhere, "kept")
      const pointing = join(dir, "pointing.db")
      symlinkSync(elsewhere, pointing)
      expect((yield* Effect.flip(backupSqlite(source, pointing, 1000))).message).toContain("already exists")
      expect(readFileSync(elsewhere, "utf8")).toBe("kept")

      // A link where the quota copy would go: refused before the database is copied.
      const file = join(dir, "copy.db")
      symlinkSync(join(dir, "nowhere"), `${file}-quota`)
      expect((yield* Effect.flip(backupSqlite(source, file, 1000))).message).toBe(
        `${file}-quota already exists; a backup never overwrites a file`
      )
      expect(existsSync(file)).toBe(false)
      expect(readdirSync(dir).filter((name) => name.includes(".partial"))).toEqual([])
    }).pipe(Effect.scoped))

  it.effect("leave nothing behind when the copy fails", () =>
    Effect.gen(function*() {
      const dir = yield* smallDatabase
      const broken = join(dir, "broken.db")
      writeFileSync(broken, "not a database at all, only text that is long enough to be read as a header")
      const file = join(dir, "copy.db")
      const failed = yield* Effect.flip(backupSqlite(broken, file, 1000))
      expect(failed.message).toMatch(/^backup failed: /)
      expect(readdirSync(dir).filter((name) => name.startsWith("copy.db") || name.includes(".partial"))).toEqual([])
    }).pipe(Effect.scoped))

  it.effect("open the source read-only: a write through the backup's connection is refused, though the file is writable", () =>
    Effect.gen(function*() {
      const dir = yield* smallDatabase
      const source = join(dir, "survey.db")
      const db = openSource(source)
      try {
        expect(() => db.exec("INSERT INTO secrets VALUES ('changed')")).toThrow(/readonly/)
      } finally {
        db.close()
      }
      const check = new Database(source, { readonly: true })
      try {
        expect(check.query("SELECT value FROM secrets").values()).toEqual([["whsec_x"]])
      } finally {
        check.close()
      }
    }).pipe(Effect.scoped))
})
