import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { spawn, spawnSync } from "node:child_process"
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { runMigrations } from "../../src/Sql/Migrations.js"
import { pgClientOptions } from "../../src/Sql/Postgres.js"

/**
 * A throwaway PostgreSQL cluster: `initdb` and `pg_ctl` in a temporary directory, listening on
 * 127.0.0.1 only, run as the `postgres` user when the process runs as root (PostgreSQL refuses to
 * run as root). `startPostgres` is shared with the benchmarks (scripts/bench/scale.ts); the default
 * export is the test suite's PostgreSQL pass (vitest globalSetup): a database `survey_template` is
 * migrated once; each test copies it (test/support/TestServer.ts). The cluster's URL reaches the
 * test workers as `TEST_POSTGRES_URL`.
 */
/** `PG_BIN`, else the newest Debian PostgreSQL under /usr/lib/postgresql (15 on Debian 12). */
const binaries = process.env.PG_BIN ?? (() => {
  const root = "/usr/lib/postgresql"
  const versions = existsSync(root)
    ? readdirSync(root).filter((v) => /^\d+$/.test(v) && existsSync(join(root, v, "bin", "initdb")))
    : []
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0]
  return join(root, newest ?? "15", "bin")
})()

const asRoot = typeof process.getuid === "function" && process.getuid() === 0

const run = (command: string, args: ReadonlyArray<string>) => {
  const [file, argv] = asRoot ? ["runuser", ["-u", "postgres", "--", command, ...args]] : [command, [...args]]
  // pg_ctl waits at most its own -t; the timeout bounds initdb and a stuck pg_ctl alike.
  const result = spawnSync(file, argv, { encoding: "utf8", timeout: 60_000 })
  if (result.status !== 0) {
    throw new Error(`${command} failed (${result.status ?? result.signal}): ${result.stderr || result.stdout}`)
  }
}

/** `run` without holding the caller's event loop: its requests go on while pg_ctl waits. */
const runAsync = (command: string, args: ReadonlyArray<string>) =>
  new Promise<void>((resolve, reject) => {
    const [file, argv] = asRoot ? ["runuser", ["-u", "postgres", "--", command, ...args]] : [command, [...args]]
    const child = spawn(file, argv, { stdio: ["ignore", "pipe", "pipe"], timeout: 60_000 })
    let output = ""
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.once("error", reject)
    child.once("close", (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`${command} failed (${code ?? signal}): ${output}`))
    )
  })

/** A port free on 127.0.0.1 at the time of asking. */
export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

export const templateDatabase = "survey_template"

export interface PostgresCluster {
  /** `postgres://postgres@127.0.0.1:PORT`, without a database name. */
  readonly base: string
  /** Stops the server (immediate shutdown, bounded) and removes its directory. */
  readonly stop: () => void
  /** Shuts the server down (fast: clients are disconnected) and keeps its data, as an outage. */
  readonly halt: () => Promise<void>
  /** Starts the halted server again on the same data directory and port. */
  readonly resume: () => Promise<void>
}

export interface PostgresOptions {
  /** Wait for the WAL flush at each commit, as a production server does; off (faster) unless asked. */
  readonly synchronousCommit?: boolean
}

/** Starts a fresh cluster in a temporary directory; the caller stops it. */
export const startPostgres = async (settings: PostgresOptions = {}): Promise<PostgresCluster> => {
  const dir = mkdtempSync(join(tmpdir(), "survey-pg-"))
  if (asRoot) {
    const postgres = spawnSync("id", ["-u", "postgres"], { encoding: "utf8" })
    const group = spawnSync("id", ["-g", "postgres"], { encoding: "utf8" })
    chownSync(dir, Number(postgres.stdout.trim()), Number(group.stdout.trim()))
  }
  chmodSync(dir, 0o700)
  const data = join(dir, "data")
  const port = await freePort()
  const options = [
    "-c listen_addresses=127.0.0.1",
    `-c port=${port}`,
    `-c unix_socket_directories=${dir}`,
    "-c fsync=off",
    `-c synchronous_commit=${settings.synchronousCommit === true ? "on" : "off"}`,
    "-c full_page_writes=off",
    "-c max_connections=300"
  ].join(" ")
  const startArgs = ["-D", data, "-l", join(dir, "server.log"), "-o", options, "-t", "30", "-w", "start"]
  try {
    run(join(binaries, "initdb"), ["-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"])
    run(join(binaries, "pg_ctl"), startArgs)
  } catch (error) {
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
  const stop = () => {
    try {
      run(join(binaries, "pg_ctl"), ["-D", data, "-m", "immediate", "-t", "30", "-w", "stop"])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }
  const halt = () => runAsync(join(binaries, "pg_ctl"), ["-D", data, "-m", "fast", "-t", "30", "-w", "stop"])
  const resume = () => runAsync(join(binaries, "pg_ctl"), startArgs)
  return { base: `postgres://postgres@127.0.0.1:${port}`, stop, halt, resume }
}

export default async function startCluster() {
  const { base, stop } = await startPostgres()
  try {
    await Effect.runPromise(
      Effect.flatMap(SqlClient.SqlClient, (admin) => admin.unsafe(`CREATE DATABASE ${templateDatabase}`)).pipe(
        Effect.provide(PgClient.layerFromPool(pgClientOptions(Redacted.make(`${base}/postgres`)))),
        Effect.asVoid,
        Effect.orDie
      )
    )
    await Effect.runPromise(
      Effect.scoped(runMigrations).pipe(
        Effect.provide(PgClient.layerFromPool(pgClientOptions(Redacted.make(`${base}/${templateDatabase}`)))),
        Effect.asVoid,
        Effect.orDie
      )
    )
    process.env.TEST_POSTGRES_URL = base
  } catch (error) {
    stop()
    throw error
  }
  return stop
}
