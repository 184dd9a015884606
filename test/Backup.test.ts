import { describe, expect, it } from "@effect/vitest"
import { Database } from "bun:sqlite"
import { Effect, Fiber, Ref, Schema } from "effect"
import { existsSync, writeFileSync } from "node:fs"
import { join } from "node:path"
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

const Page = Schema.parseJson(Schema.Struct({ respondentToken: Schema.String }))
const Saved = Schema.parseJson(Schema.Struct({ responseId: Schema.String }))
const Ids = Schema.Array(Schema.Tuple(Schema.String))
const Single = Schema.Tuple(Schema.Number)

/** One finished response to `srv_short` through the survey page and the respondent API; its id. */
const complete = (base: string) =>
  Effect.gen(function*() {
    const page = yield* request(`${base}/s/srv_short`, { headers: { accept: "application/json" } })
    const token = Schema.decodeUnknownSync(Page)(page.text).respondentToken
    const saved = yield* request(`${base}/respond/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ answers: [{ questionId: "q_short_text", values: ["hello"] }], finished: true })
    })
    expect(saved.status).toBe(201)
    return Schema.decodeUnknownSync(Saved)(saved.text).responseId
  })

/** The single number a query over the copy answers. */
const single = (db: Database, text: string) => Schema.decodeUnknownSync(Single)(db.query(text).values()[0])[0]

// The copy of a live SQLite database; the PostgreSQL pass checks the refusal below.
describe.runIf(testDatabase === "sqlite")("backup FILE of a live SQLite database", () => {
  it.live("is intact and holds a prefix of the commits of a writer that kept committing while it ran", () =>
    Effect.gen(function*() {
      const db = yield* sharedDatabase(respondentFixture)
      const server = yield* serveProcess(db.flags, { RESPONDENT_LIMIT_PER_ADDRESS: "1000000", RESPONDENT_LIMIT_PER_SURVEY: "1000000" })
      // A request with a key writes the quota file too.
      expect((yield* request(`${server.base}/api/v1/surveys`, { headers: { authorization: `Bearer ${TOKENS.editor}` } })).status).toBe(200)

      const committed = yield* Ref.make<ReadonlyArray<string>>([])
      const writer = yield* Effect.fork(Effect.forever(
        Effect.flatMap(complete(server.base), (id) => Ref.update(committed, (ids) => [...ids, id]))
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
