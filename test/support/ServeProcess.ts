import type { Subprocess } from "bun"
import { Effect, Redacted } from "effect"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { AppConfig } from "../../src/Config.js"
import type { FixtureInput } from "../../src/Fixtures/Fixture.js"
import { postgresDatabase, testDatabase } from "./TestServer.js"
import { eventually } from "./WebhookReceiver.js"

const main = join(import.meta.dirname, "..", "..", "src", "main.ts")

/** The environment of every process a test starts: private webhook targets, JSON logs. */
export const processEnv: Readonly<Record<string, string | undefined>> = {
  ...process.env,
  WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
  LOG_FORMAT: "json",
  LOG_LEVEL: "warn"
}

/** Runs an operator command (`survey-service <args>`) to completion; fails when it exits non-zero. */
export const cli = (args: ReadonlyArray<string>, env: Readonly<Record<string, string | undefined>> = {}) =>
  Effect.promise(async () => {
    const proc = Bun.spawn(["bun", main, ...args], { env: { ...processEnv, ...env }, stdout: "pipe", stderr: "pipe" })
    const code = await proc.exited
    const out = await new Response(proc.stdout).text()
    if (code !== 0) throw new Error(`${args.join(" ")} exited ${code}: ${await new Response(proc.stderr).text()}`)
    return out
  })

export const freePort = () => {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data: () => {} } })
  const port = probe.port
  probe.stop(true)
  return port
}

/**
 * One database for several processes, migrated and loaded with `fixture`: a SQLite file in a
 * temporary directory (removed with the scope), or on the PostgreSQL pass a database of the test
 * cluster (test/support/TestServer.ts). `flags` name it to the CLI and `serve`; `config` reads it
 * from the test (test/support/Elsewhere.ts).
 */
export const sharedDatabase = (fixture: FixtureInput) =>
  Effect.gen(function*() {
    const dir = yield* Effect.acquireRelease(
      Effect.sync(() => mkdtempSync(join(tmpdir(), "survey-processes-"))),
      (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
    )
    const databasePath = join(dir, "survey.db")
    const url = testDatabase === "postgres" ? yield* postgresDatabase() : undefined
    const flags: ReadonlyArray<string> = url === undefined ? ["--db", databasePath] : ["--database-url", url]
    const config = AppConfig.layerTest(url === undefined ? { databasePath } : { databaseUrl: Redacted.make(url) })
    const file = join(dir, "fixture.json")
    writeFileSync(file, JSON.stringify(fixture))
    yield* cli(["import", file, ...flags])
    return { dir, flags, config } as const
  })

export interface ServeProcess {
  readonly proc: Subprocess<"ignore", "ignore", "pipe">
  readonly port: number
  readonly base: string
  readonly pid: number
}

/**
 * A real `serve` process on a free port of 127.0.0.1 over the database `flags` name, started and awaited
 * until `/healthz` answers; killed with SIGKILL when the scope closes if it still runs.
 */
export const serveProcess = (flags: ReadonlyArray<string>, env: Readonly<Record<string, string | undefined>> = {}) =>
  Effect.gen(function*() {
    const port = freePort()
    const base = `http://127.0.0.1:${port}`
    const proc = yield* Effect.acquireRelease(
      Effect.sync(() =>
        Bun.spawn(["bun", main, "serve", "--port", String(port), ...flags], {
          env: { ...processEnv, PUBLIC_BASE_URL: base, ...env },
          stdin: "ignore",
          stdout: "ignore",
          stderr: "pipe"
        })
      ),
      (p) =>
        Effect.promise(async () => {
          if (p.exitCode === null && p.signalCode === null) p.kill(9)
          await p.exited
        })
    )
    const healthy = Effect.promise(() => fetch(`${base}/healthz`).then((r) => r.ok, () => false))
    yield* eventually(healthy, (ok) => ok, { tries: 600, everyMillis: 50 })
    return { proc, port, base, pid: proc.pid } satisfies ServeProcess
  })

/** `fetch` as an Effect, answering status and text. */
export const request = (url: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const res = await fetch(url, init)
    return { status: res.status, headers: res.headers, text: await res.text() }
  })
