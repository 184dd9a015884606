import { describe, expect, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { AppConfig } from "../src/Config.js"
import { elsewhereRows } from "./support/Elsewhere.js"
import { postgresDatabase, testDatabase } from "./support/TestServer.js"

const root = join(import.meta.dirname, "..")

/**
 * A database of the test's own for the CLI (a SQLite file in `dir`, or a PostgreSQL database of
 * the test cluster), as command-line flags and as the configuration that reads it afterwards.
 */
const database = (dir: string) =>
  Effect.gen(function*() {
    if (testDatabase === "postgres") {
      const url = yield* postgresDatabase()
      return { flags: ["--database-url", url], config: AppConfig.layerTest({ databaseUrl: Redacted.make(url) }) }
    }
    const path = join(dir, "cli.db")
    return { flags: ["--db", path], config: AppConfig.layerTest({ databasePath: path }) }
  })

const cli = (db: ReadonlyArray<string>, ...args: Array<string>) => {
  const result = Bun.spawnSync(["bun", "run", "src/main.ts", ...args, ...db], {
    cwd: root,
    env: { ...process.env, LOG_FORMAT: "json", LOG_LEVEL: "Warning" },
    stdout: "pipe",
    stderr: "pipe",
    timeout: 60_000
  })
  return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() }
}

describe("operator CLI", () => {
  it.scoped("migrate, import, keys create/revoke and survey lifecycle against one database", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "survey-cli-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const { config, flags: db } = yield* database(dir)
      const query = (statement: string) => elsewhereRows(statement).pipe(Effect.provide(config))
      expect(cli(db, "migrate").code).toBe(0)
      const imported = cli(db, "import", "test/fixtures/smoke.json")
      expect(imported.code).toBe(0)
      expect(imported.stdout).toContain("Imported 1 surveys")

      const created = cli(db, "keys", "create", "--workspace", "ws_smoke", "--account", "acc_smoke", "--surveys", "srv_smoke")
      expect(created.code).toBe(0)
      const token = created.stdout.trim()
      expect(token).toMatch(/^sk_live_[0-9A-Za-z]{32}$/)

      const stored = yield* query("SELECT token_hash, survey_ids FROM api_keys WHERE token_hash <> ''")
      expect(JSON.stringify(stored)).not.toContain(token)
      expect(stored).toContainEqual(expect.objectContaining({ surveyIds: "[\"srv_smoke\"]" }))

      expect(cli(db, "surveys", "close", "srv_smoke").code).toBe(0)
      const again = cli(db, "surveys", "close", "srv_smoke")
      expect(again.code).not.toBe(0)
      expect(again.stderr + again.stdout).toContain("cannot close")
      expect(cli(db, "surveys", "publish", "srv_smoke").code).toBe(0)
      const events = yield* query("SELECT type, survey_id FROM events ORDER BY seq")
      expect(events).toEqual([
        { type: "survey.closed", surveyId: "srv_smoke" },
        { type: "survey.published", surveyId: "srv_smoke" }
      ])
      expect(cli(db, "surveys", "trash", "srv_smoke").code).toBe(0)
      expect(cli(db, "surveys", "publish", "srv_smoke").code).not.toBe(0)

      expect(cli(db, "keys", "revoke", token).code).toBe(0)
      expect(cli(db, "keys", "revoke", token).code).not.toBe(0)
    }))

  it.scoped("refuses a fixture nested too deep or with a date that does not exist, importing nothing", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "survey-cli-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const { config, flags: db } = yield* database(dir)
      const deep = join(dir, "deep.json")
      writeFileSync(deep, `{"plans":${"[".repeat(20_000)}${"]".repeat(20_000)}}`)
      const refusedDeep = cli(db, "import", deep)
      expect(refusedDeep.code).not.toBe(0)
      expect(refusedDeep.stderr + refusedDeep.stdout).toContain("nests arrays and objects deeper than 64 levels")
      const impossible = join(dir, "impossible.json")
      writeFileSync(impossible, JSON.stringify({
        plans: [{ id: "p", apiAccess: true, burstLimit: 1, burstWindowMinutes: 1, dailyLimit: 1, monthlyLimit: 1 }],
        accounts: [{ id: "acc_x", planId: "p" }],
        workspaces: [{ id: "ws_x", ownerAccountId: "acc_x" }],
        surveys: [{ id: "srv_x", workspaceId: "ws_x", title: "T", status: "draft", createdAt: "2026-02-30T00:00:00Z", updatedAt: "2026-03-01T00:00:00Z" }]
      }))
      const refusedDate = cli(db, "import", impossible)
      expect(refusedDate.code).not.toBe(0)
      expect(refusedDate.stderr + refusedDate.stdout).toContain("surveys.0.createdAt: expected an existing ISO 8601 instant")
      expect(yield* elsewhereRows("SELECT count(*) AS n FROM plans WHERE id = 'p'").pipe(Effect.provide(config)))
        .toEqual([{ n: 0 }])
    }))
})

describe("start-up with database settings that do not work", () => {
  const start = (args: ReadonlyArray<string>, env: Record<string, string> = {}) => {
    const result = Bun.spawnSync(["bun", "run", "src/main.ts", ...args], {
      cwd: root,
      env: { ...process.env, LOG_FORMAT: "json", ...env },
      stdout: "pipe",
      stderr: "pipe",
      timeout: 60_000
    })
    return { code: result.exitCode, stderr: result.stderr.toString().trim(), stdout: result.stdout.toString() }
  }
  const closedPort = () => {
    const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data: () => {} } })
    const port = probe.port
    probe.stop(true)
    return port
  }

  it("a database that cannot be reached: one line naming where, never the password, and exit 1", () => {
    const url = `postgres://survey:hunter2@127.0.0.1:${closedPort()}/survey`
    for (const run of [start(["serve", "--port", "0", "--database-url", url]), start(["migrate"], { DATABASE_URL: url })]) {
      expect(run.code).toBe(1)
      expect(run.stderr.split("\n")).toHaveLength(1)
      expect(run.stderr).toMatch(/^error: cannot connect to the PostgreSQL database at 127\.0\.0\.1:\d+\/survey: .*ECONNREFUSED/)
      expect(run.stderr + run.stdout).not.toContain("hunter2")
    }
  })

  it("a URL that is not a PostgreSQL URL: one line and exit 1", () => {
    for (const [env, args] of [
      [{ DATABASE_URL: "mysql://survey:hunter2@db/survey" }, ["migrate"]],
      [{}, ["migrate", "--database-url", "postgres://survey:hunter2@[not-a-host/survey"]]
    ] as const) {
      const run = start(args, env)
      expect(run.code).toBe(1)
      expect(run.stderr.split("\n")).toHaveLength(1)
      expect(run.stderr).toMatch(/^error: .*(DATABASE_URL must start with postgres:\/\/ or postgresql:\/\/|--database-url is not a valid URL)/)
      expect(run.stderr).not.toContain("hunter2")
    }
  })

  it("a URL that sets statement_timeout itself: one line naming the setting it would override, and exit 1", () => {
    const url = `postgres://survey:hunter2@127.0.0.1:${closedPort()}/survey?sslmode=disable&statement_timeout=0`
    for (const run of [start(["serve", "--port", "0", "--database-url", url]), start(["migrate"], { DATABASE_URL: url })]) {
      expect(run.code).toBe(1)
      expect(run.stderr.split("\n")).toHaveLength(1)
      expect(run.stderr).toMatch(/^error: DATABASE_URL sets statement_timeout, which would override DATABASE_STATEMENT_TIMEOUT_MS/)
      expect(run.stderr + run.stdout).not.toContain("hunter2")
    }
  })

  it("a pool size, pool timeout or statement timeout that is not a whole number in range: one line naming it, and exit 1", () => {
    for (const [env, args, name] of [
      [{ DATABASE_POOL_SIZE: "0" }, ["migrate"], "DATABASE_POOL_SIZE"],
      [{ DATABASE_POOL_TIMEOUT_MS: "soon" }, ["migrate"], "DATABASE_POOL_TIMEOUT_MS"],
      [{}, ["migrate", "--database-pool-size", "5000"], "--database-pool-size"],
      [{}, ["migrate", "--database-pool-timeout-ms", "0"], "--database-pool-timeout-ms"],
      [{ DATABASE_STATEMENT_TIMEOUT_MS: "-5" }, ["migrate"], "DATABASE_STATEMENT_TIMEOUT_MS"],
      [{}, ["migrate", "--database-statement-timeout-ms", "600001"], "--database-statement-timeout-ms"]
    ] as const) {
      const run = start(args, { DATABASE_PATH: ":memory:", ...env })
      expect([name, run.code]).toEqual([name, 1])
      expect(run.stderr.split("\n")).toHaveLength(1)
      expect(run.stderr).toMatch(/^error: /)
      expect(run.stderr).toContain(name)
    }
  })
})
