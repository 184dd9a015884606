import type { Subprocess } from "bun"
import { Duration, Effect, Redacted } from "effect"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { AppConfig } from "../../src/Config.js"
import type { FixtureInput } from "../../src/Fixtures/Fixture.js"
import { postgresDatabase, testDatabase } from "./TestServer.js"

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

/**
 * How long a process test waits, in real time, for what a process does: start, deliver, stop.
 * Generous, so that a loaded machine is slow rather than failing; a wait ends on its signal.
 */
export const PROCESS_BOUND = Duration.minutes(2)

/** The time limit of a test that starts processes, in milliseconds: room for several waits of `PROCESS_BOUND`'s order. */
export const PROCESS_TEST_TIMEOUT = 300_000

/** `signal` within `PROCESS_BOUND` of real time (process tests run on the live clock); else the test fails naming `what`. */
export const within = <A, E, R>(what: string, signal: Effect.Effect<A, E, R>) =>
  signal.pipe(
    Effect.timeoutFail({
      duration: PROCESS_BOUND,
      onTimeout: () => new Error(`${what}: not within ${Duration.format(PROCESS_BOUND)}`)
    }),
    Effect.orDie
  )

/** The lines a stream writes, as they come: a wait for a line ends on that line, or when the stream ends. */
const lineWatch = (stream: ReadableStream<Uint8Array>) => {
  const lines: Array<string> = []
  const listeners = new Set<() => void>()
  let ended = false
  void (async () => {
    const decoder = new TextDecoder()
    let rest = ""
    const reader = stream.getReader()
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      rest += decoder.decode(read.value, { stream: true })
      for (let end = rest.indexOf("\n"); end >= 0; end = rest.indexOf("\n")) {
        lines.push(rest.slice(0, end))
        rest = rest.slice(end + 1)
      }
      for (const listener of [...listeners]) listener()
    }
    ended = true
    for (const listener of [...listeners]) listener()
  })()
  /** The first line that `matches`; none once the stream ended without one. */
  const lineWhere = (matches: (line: string) => boolean) =>
    new Promise<string | undefined>((resolve) => {
      const check = () => {
        const line = lines.find(matches)
        if (line === undefined && !ended) return
        listeners.delete(check)
        resolve(line)
      }
      listeners.add(check)
      check()
    })
  return { lineWhere }
}

/**
 * Polls `probe` until `check` holds, within `PROCESS_BOUND`: for what a process writes to the
 * database, which tells nobody. Answers the value that passed.
 */
export const polled = <A, R>(what: string, probe: Effect.Effect<A, never, R>, check: (value: A) => boolean) =>
  within(
    what,
    Effect.gen(function*() {
      while (true) {
        const value = yield* probe
        if (check(value)) return value
        yield* Effect.sleep("50 millis")
      }
    })
  )

export interface ServeProcess {
  readonly proc: Subprocess<"ignore", "pipe", "pipe">
  readonly port: number
  readonly base: string
  readonly pid: number
  /** Waits (within `PROCESS_BOUND`) until the process logs a line containing `text`. */
  readonly logged: (text: string) => Effect.Effect<string>
}

/**
 * A real `serve` process on a free port of 127.0.0.1 over the database `flags` name, started and
 * awaited until it logs that it listens (logged once the HTTP surface is served); killed with
 * SIGKILL when the scope closes if it still runs. Its log (JSON lines, level info) is read as it
 * comes, so that the process never blocks on a full pipe.
 */
export const serveProcess = (flags: ReadonlyArray<string>, env: Readonly<Record<string, string | undefined>> = {}) =>
  Effect.gen(function*() {
    const port = freePort()
    const base = `http://127.0.0.1:${port}`
    const proc = yield* Effect.acquireRelease(
      Effect.sync(() =>
        Bun.spawn(["bun", main, "serve", "--port", String(port), ...flags], {
          env: { ...processEnv, LOG_LEVEL: "info", PUBLIC_BASE_URL: base, ...env },
          stdin: "ignore",
          stdout: "pipe",
          stderr: "pipe"
        })
      ),
      (p) =>
        Effect.promise(async () => {
          if (p.exitCode === null && p.signalCode === null) p.kill(9)
          await p.exited
        })
    )
    const log = lineWatch(proc.stdout)
    const listening = yield* within(
      `serve on port ${port} to listen`,
      Effect.promise(() => log.lineWhere((line) => line.includes(`"Listening on http://`)))
    )
    if (listening === undefined) {
      const stderr = yield* Effect.promise(() => new Response(proc.stderr).text())
      return yield* Effect.dieMessage(`serve on port ${port} exited ${yield* Effect.promise(() => proc.exited)}: ${stderr}`)
    }
    const logged = (text: string) =>
      Effect.flatMap(
        within(`serve on port ${port} to log ${text}`, Effect.promise(() => log.lineWhere((line) => line.includes(text)))),
        (line) => line === undefined ? Effect.dieMessage(`serve on port ${port} ended without logging ${text}`) : Effect.succeed(line)
      )
    return { proc, port, base, pid: proc.pid, logged } satisfies ServeProcess
  })

/** `fetch` as an Effect, answering status and text. */
export const request = (url: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const res = await fetch(url, init)
    return { status: res.status, headers: res.headers, text: await res.text() }
  })
