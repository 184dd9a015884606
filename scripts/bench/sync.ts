/**
 * Sync by `updatedAfter` under a race, for as long as asked: the suite's race (test/SyncRace.test.ts,
 * test/support/SyncRace.ts) run longer, over `--processes` `serve` processes on one database.
 * PostgreSQL runs in a throwaway cluster that the run starts (test/support/PostgresCluster.ts) and
 * stops; SQLite in a temporary file. Prints the changes checked, misses, late commits, torn reads
 * and the lag from acknowledgement to first sighting, and the first failures if there are any.
 *
 *   bun run bench:sync [-- --seconds 300 --database pg --processes 2 --writers 16]
 */
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { parseArgs } from "node:util"
import * as Pg from "pg"
import { freePort, type PostgresCluster, startPostgres } from "../../test/support/PostgresCluster.js"
import { raceEnv, raceFixture, runSyncRace } from "../../test/support/SyncRace.js"
import { cleanup, fmt, machine, root, table, tempDir } from "./support.js"

const { values: args } = parseArgs({
  options: {
    seconds: { type: "string", default: "60" },
    database: { type: "string", default: "pg" },
    processes: { type: "string", default: "2" },
    writers: { type: "string", default: "16" },
    seed: { type: "string", default: "1" }
  }
})

const main = join(root, "src", "main.ts")
const dir = tempDir()
let postgres: PostgresCluster | undefined
const children: Array<ReturnType<typeof Bun.spawn>> = []

const cli = (argv: ReadonlyArray<string>) => {
  const result = Bun.spawnSync(["bun", main, ...argv], { cwd: root, stdout: "pipe", stderr: "pipe" })
  if (result.exitCode !== 0) throw new Error(`${argv.join(" ")}: ${result.stderr.toString()}`)
}

const serve = async (flags: ReadonlyArray<string>) => {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const proc = Bun.spawn(["bun", main, "serve", "--port", String(port), ...flags], {
    cwd: root,
    env: { ...process.env, ...raceEnv, LOG_FORMAT: "json", LOG_LEVEL: "warn", PUBLIC_BASE_URL: base },
    stdout: "ignore",
    stderr: "inherit"
  })
  children.push(proc)
  for (let i = 0; i < 600; i++) {
    try {
      if ((await fetch(`${base}/healthz`)).ok) return base
    } catch {
      // not listening yet
    }
    await Bun.sleep(100)
  }
  throw new Error(`serve on ${base} did not answer /healthz`)
}

try {
  let flags: ReadonlyArray<string>
  if (args.database === "sqlite") {
    flags = ["--db", join(dir, "survey.db")]
  } else {
    postgres = await startPostgres()
    const admin = new Pg.Client({ connectionString: `${postgres.base}/postgres` })
    await admin.connect()
    await admin.query("CREATE DATABASE race")
    await admin.end()
    flags = ["--database-url", `${postgres.base}/race`]
  }
  const fixture = join(dir, "fixture.json")
  writeFileSync(fixture, JSON.stringify(raceFixture))
  cli(["import", fixture, ...flags])
  const bases = await Promise.all(Array.from({ length: Number(args.processes) }, () => serve(flags)))
  const report = await runSyncRace({
    bases,
    seconds: Number(args.seconds),
    writers: Number(args.writers),
    readers: [{ limit: 2, pauseMs: 100 }, { limit: 10, pauseMs: 100 }, { limit: 100, pauseMs: 1500 }],
    seed: Number(args.seed)
  })
  console.log(`# bench:sync, ${args.database}, ${args.processes} processes, ${args.writers} writers, 3 readers, ${args.seconds} s (${machine()})`)
  console.log(table(
    ["changes checked", "deletions", "walks", "pages", "misses", "late commits", "lost", "torn reads", "unanswered", "lag p50 ms", "lag p99 ms"],
    [[
      String(report.changes),
      String(report.deletions),
      String(report.walks),
      String(report.pages),
      String(report.misses.length),
      String(report.late.length),
      String(report.lost.length),
      String(report.torn),
      String(report.unanswered),
      fmt(report.lagP50, 0),
      fmt(report.lagP99, 0)
    ]]
  ))
  if (report.firstFailureAt !== undefined) {
    console.log(`first failure acknowledged ${fmt(report.firstFailureAt / 1000)} s into the run; the first ten:`)
    for (const failure of [...report.misses, ...report.late, ...report.lost].slice(0, 10)) console.log(JSON.stringify(failure))
    process.exitCode = 1
  }
} finally {
  for (const child of children) child.kill()
  await Promise.all(children.map((child) => child.exited))
  postgres?.stop()
  cleanup(dir)
}
