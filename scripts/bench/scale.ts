/**
 * Many processes on one database: throughput of the read endpoints and of respondent completions
 * with one `serve` process and with two on the same database, side by side in one run, for each
 * storage the service supports: a SQLite file, and PostgreSQL in a throwaway cluster that the run
 * starts (test/support/PostgresCluster.ts: initdb + pg_ctl in a temporary directory, 127.0.0.1
 * only) and stops at the end. The processes are the compiled binary; each process gets its own
 * wrk with half the connections, and the figures are their sums.
 *
 *   bun run bench:scale [-- --seconds 5 --connections 32 --surveys 20 --responses 500]
 *
 * Completions are measured to one survey, and spread over 20 surveys taken in turn by each request:
 * saves of one survey take turns on its change clock (src/Responses/ChangeClockRepo.ts), saves of
 * different surveys do not.
 *
 * `--only completions` (or `reads`) keeps one kind of workload; `--databases pg` (or `sqlite`) one
 * storage; `--against <git ref>` also builds the binary of that commit (from `git archive`, with
 * this checkout's node_modules) and measures it in the same cells, alternating with this one, so
 * that a change is compared with its predecessor on the same machine at the same time;
 * `--repeat N` runs every cell N times, alternating, and prints each run and the median.
 */
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs"
import { loadavg } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import * as Pg from "pg"
import { BENCH_TOKEN, surveyId, writeDataset } from "./Dataset.js"
import { completionFixture, completionScript, respondentToken, SPREAD } from "./CompletionSurveys.js"
import { freePort, type PostgresCluster, startPostgres } from "../../test/support/PostgresCluster.js"
import { buildBinary, cleanup, databaseArgs, machine, root, type Server, startServer, table, tempDir } from "./support.js"

const { values: args } = parseArgs({
  options: {
    seconds: { type: "string", default: "5" },
    connections: { type: "string", default: "32" },
    surveys: { type: "string", default: "20" },
    responses: { type: "string", default: "500" },
    only: { type: "string" },
    databases: { type: "string", default: "sqlite,pg" },
    against: { type: "string" },
    repeat: { type: "string", default: "1" }
  }
})
const seconds = Math.min(60, Math.max(1, Number(args.seconds)))
const connections = Math.min(256, Math.max(2, Number(args.connections)))
const surveys = Math.min(500, Math.max(1, Number(args.surveys)))
const responsesPerSurvey = Math.min(5000, Math.max(1, Number(args.responses)))
const repeat = Math.min(10, Math.max(1, Number(args.repeat)))
const databases = new Set(args.databases.split(","))
if (args.only !== undefined && args.only !== "completions" && args.only !== "reads") {
  console.error("--only takes completions or reads")
  process.exit(1)
}

if (!existsSync("/usr/bin/wrk")) {
  console.error("bench:scale loads the servers with wrk: install it first (Debian: apt-get install wrk).")
  process.exit(1)
}

interface Workload {
  readonly name: string
  /** The wrk arguments after the URL's base: path and, for a write, a Lua script. */
  readonly path: string
  readonly script?: (dir: string, server: Server) => Promise<string>
}

/** wrk's script for completions to the first `surveys` surveys, taken in turn by each request. */
const completions = (surveys: number) => async (dir: string, server: Server) => {
  const tokens: Array<string> = []
  for (let n = 1; n <= surveys; n++) tokens.push(await respondentToken(server.url, n))
  const file = join(dir, `complete-${surveys}-${server.pid}.lua`)
  writeFileSync(file, completionScript(tokens))
  return file
}

const allWorkloads: ReadonlyArray<Workload> = [
  { name: "GET /surveys/{id}", path: `/api/v1/surveys/${surveyId(1)}` },
  { name: "GET /surveys/{id}/responses (25)", path: `/api/v1/surveys/${surveyId(1)}/responses?limit=25` },
  { name: "GET /surveys/{id}/analytics", path: `/api/v1/surveys/${surveyId(1)}/analytics` },
  { name: "POST /respond/v1/responses (completion)", path: "/respond/v1/responses", script: completions(1) },
  {
    name: `POST /respond/v1/responses (completion, ${SPREAD} surveys in turn)`,
    path: "/respond/v1/responses",
    script: completions(SPREAD)
  }
]
const workloads = allWorkloads.filter((w) =>
  args.only === undefined || (args.only === "completions") === (w.script !== undefined)
)

interface Load {
  /** Requests answered within the cell's time. */
  readonly answered: number
  readonly rps: number
  readonly p99Ms: number
  readonly non2xx: number
  /** Requests wrk gave up on: no answer within its timeout, or a socket error. */
  readonly errors: number
  /**
   * PostgreSQL only: of the service's connections running a statement, how many waited for a
   * lock, on average over samples of pg_stat_activity taken every 100 ms during the cell.
   */
  readonly lockWaits?: { readonly waiting: number; readonly active: number }
}

const millis = (text: string) => {
  const match = /([\d.]+)(us|ms|s)/.exec(text)
  if (match === null) return Number.NaN
  const value = Number(match[1])
  return match[2] === "us" ? value / 1000 : match[2] === "s" ? value * 1000 : value
}

const wrk = async (server: Server, workload: Workload, conns: number, duration: number, script?: string): Promise<Load> => {
  const child = Bun.spawn([
    "/usr/bin/wrk",
    "-t1",
    `-c${conns}`,
    `-d${duration}s`,
    "--latency",
    "--timeout",
    "10s",
    "-H",
    `Authorization: Bearer ${BENCH_TOKEN}`,
    ...(script === undefined ? [] : ["-s", script]),
    `${server.url}${workload.path}`
  ], { stdout: "pipe", stderr: "pipe" })
  const out = await new Response(child.stdout).text()
  await child.exited
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? "NaN")
  if (!Number.isFinite(rps)) throw new Error(`could not read wrk's output:\n${out}`)
  return {
    answered: Number(/(\d+) requests in/.exec(out)?.[1] ?? "0"),
    rps,
    p99Ms: millis(/\s99%\s+(\S+)/.exec(out)?.[1] ?? ""),
    non2xx: Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? "0"),
    errors: (/Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out) ?? [])
      .slice(1)
      .reduce((sum, n) => sum + Number(n), 0)
  }
}

/** Loads every process at once, each with its share of the connections; answers the sums. */
/** Samples the service's connections in pg_stat_activity until `until` settles: mean waiting on a lock, mean active. */
const sampleLocks = async (url: string, until: Promise<unknown>) => {
  const client = new Pg.Client({ connectionString: url })
  await client.connect()
  let done = false
  void until.finally(() => {
    done = true
  })
  let waiting = 0
  let active = 0
  let samples = 0
  /** What the waiting statements wait on, by lock and statement, for the log. */
  const waits = new Map<string, number>()
  try {
    for (let i = 0; i < seconds * 10 + 100 && !done; i++) {
      const result = await client.query(
        `SELECT count(*) FILTER (WHERE wait_event_type = 'Lock') AS waiting, count(*) FILTER (WHERE state = 'active') AS active
         FROM pg_stat_activity WHERE application_name = 'survey-service'`
      )
      const row: unknown = result.rows[0]
      if (typeof row === "object" && row !== null && "waiting" in row && "active" in row) {
        waiting += Number(row.waiting)
        active += Number(row.active)
        samples += 1
      }
      const waiters = await client.query(
        `SELECT wait_event || ': ' || regexp_replace(left(query, 40), '\\s+', ' ', 'g') AS what FROM pg_stat_activity
         WHERE application_name = 'survey-service' AND wait_event_type = 'Lock'`
      )
      for (const w of waiters.rows) {
        const what: unknown = typeof w === "object" && w !== null && "what" in w ? w.what : undefined
        if (typeof what === "string") waits.set(what, (waits.get(what) ?? 0) + 1)
      }
      await Bun.sleep(100)
    }
  } finally {
    await client.end()
  }
  const top = [...waits].sort((a, b) => b[1] - a[1]).slice(0, 3)
  if (top.length > 0) console.error(`  lock waits: ${top.map(([what, n]) => `${(n / Math.max(1, samples)).toFixed(1)} × ${what}`).join("; ")}`)
  return samples === 0 ? undefined : { waiting: waiting / samples, active: active / samples }
}

const measure = async (dir: string, servers: ReadonlyArray<Server>, workload: Workload, pgUrl?: string): Promise<Load> => {
  const scripts = await Promise.all(servers.map((s) => workload.script?.(dir, s)))
  const share = Math.max(1, Math.floor(connections / servers.length))
  await Promise.all(servers.map((s, i) => wrk(s, workload, share, 1, scripts[i]))) // warm-up, not kept
  const running = Promise.all(servers.map((s, i) => wrk(s, workload, share, seconds, scripts[i])))
  const lockWaits = pgUrl === undefined ? undefined : await sampleLocks(pgUrl, running)
  const loads = await running
  return {
    ...(lockWaits === undefined ? {} : { lockWaits }),
    answered: loads.reduce((sum, l) => sum + l.answered, 0),
    rps: loads.reduce((sum, l) => sum + l.rps, 0),
    p99Ms: Math.max(...loads.map((l) => l.p99Ms)),
    non2xx: loads.reduce((sum, l) => sum + l.non2xx, 0),
    errors: loads.reduce((sum, l) => sum + l.errors, 0)
  }
}

const cell = (load: Load | undefined) =>
  load === undefined
    ? "n/a"
    : load.answered === 0
    ? `no answer within ${seconds} s${load.errors > 0 ? `, ${load.errors} timeouts/errors` : ""}`
    : `${load.rps.toFixed(0)} req/s, p99 ${load.p99Ms.toFixed(1)} ms${load.non2xx > 0 ? `, ${load.non2xx} non-2xx` : ""}${
    load.errors > 0 ? `, ${load.errors} timeouts/errors` : ""
  }${
    load.lockWaits === undefined
      ? ""
      : `; ${load.lockWaits.waiting.toFixed(1)} of ${load.lockWaits.active.toFixed(1)} active connections wait on a lock`
  }`

interface Setup {
  readonly name: string
  readonly processes: number
  readonly env: Record<string, string>
  readonly database: string
  /** PostgreSQL: the URL on which the run samples the service's connections. */
  readonly pgUrl?: string
}

interface Build {
  /** The column's suffix: empty for this checkout, else the commit measured beside it. */
  readonly label: string
  readonly binary: string
}

/** The binary of `ref`, built from its files beside this checkout's dependencies. */
const buildAt = (ref: string, dir: string): Build => {
  const run = (cmd: ReadonlyArray<string>, cwd: string) => {
    const result = Bun.spawnSync([...cmd], { cwd, stdout: "pipe", stderr: "pipe" })
    if (result.exitCode !== 0) throw new Error(`${cmd.join(" ")} failed: ${result.stderr.toString()}`)
    return result.stdout.toString().trim()
  }
  const commit = run(["git", "rev-parse", "--short", ref], root)
  const tree = join(dir, `tree-${commit}`)
  mkdirSync(tree)
  run(["sh", "-c", `git archive ${commit} | tar -x -C ${JSON.stringify(tree)}`], root)
  symlinkSync(join(root, "node_modules"), join(tree, "node_modules"))
  run(["bun", "run", "build"], tree)
  return { label: commit, binary: join(tree, "dist/survey-service") }
}

const binary = buildBinary()

/** Imports the dataset's fixture files into `database` (migrating it first). */
const importInto = (files: ReadonlyArray<string>, database: string) => {
  for (const file of files) {
    const result = Bun.spawnSync([binary, "import", file, ...databaseArgs(database)], { cwd: root, stdout: "pipe", stderr: "pipe" })
    if (result.exitCode !== 0) throw new Error(`import into ${database} failed: ${result.stderr.toString()}`)
  }
}

/** The 1-minute load average, for the header: the machine may be shared. */
const loadNow = () => loadavg()[0]?.toFixed(1) ?? "?"
const loadAtStart = loadNow()

const columnName = (setup: Setup, build: Build) => build.label === "" ? setup.name : `${setup.name}, ${build.label}`

/** The run with the median rate, for the summary row. */
const median = (loads: ReadonlyArray<Load>): Load | undefined =>
  [...loads].sort((a, b) => a.rps - b.rps)[Math.floor((loads.length - 1) / 2)]

const work = tempDir()
/** Per column (setup and build), per workload, one load per run. */
const results = new Map<string, Map<string, Array<Load>>>()
let postgres: PostgresCluster | undefined
// Interrupted (Ctrl-C): the cluster and the files go too; the servers, our children, get the same signal.
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    postgres?.stop()
    cleanup(work)
    process.exit(130)
  })
}
try {
  const files = [...(await writeDataset(work, { surveys, responsesPerSurvey, deepResponses: 0 }))]
  const extra = join(work, "fixture-completions.json")
  writeFileSync(extra, JSON.stringify(completionFixture))
  files.push(extra)
  const dbPath = join(work, "bench.db")
  // Every simulated respondent comes from 127.0.0.1 to one survey, far faster than real ones: the
  // respondent limits (test/RespondentLimits.test.ts) are lifted, or completions would measure 429s.
  const env = { RESPONDENT_LIMIT_PER_ADDRESS: "1000000", RESPONDENT_LIMIT_PER_SURVEY: "1000000" }
  const setups: Array<Setup> = []
  if (databases.has("sqlite")) {
    importInto(files, dbPath)
    setups.push(
      { name: "SQLite, 1 process", processes: 1, env, database: dbPath },
      { name: "SQLite, 2 processes", processes: 2, env, database: dbPath }
    )
  }
  if (databases.has("pg")) {
    postgres = await startPostgres()
    const pgUrl = `${postgres.base}/postgres`
    importInto(files, pgUrl)
    setups.push(
      { name: "PostgreSQL, 1 process", processes: 1, env, database: pgUrl, pgUrl },
      { name: "PostgreSQL, 2 processes", processes: 2, env, database: pgUrl, pgUrl }
    )
  }
  const builds: ReadonlyArray<Build> = [
    { label: "", binary },
    ...(args.against === undefined ? [] : [buildAt(args.against, work)])
  ]
  for (let run = 0; run < repeat; run++) {
    for (const setup of setups) {
      for (const build of builds) {
        const column = columnName(setup, build)
        const servers: Array<Server> = []
        try {
          for (let i = 0; i < setup.processes; i++) {
            servers.push(await startServer(build.binary, setup.database, await freePort(), setup.env))
          }
          const row = results.get(column) ?? new Map<string, Array<Load>>()
          for (const workload of workloads) {
            const load = await measure(work, servers, workload, setup.pgUrl)
            row.set(workload.name, [...(row.get(workload.name) ?? []), load])
            console.error(`run ${run + 1}, ${column}, ${workload.name}: ${cell(load)} (load average ${loadNow()})`)
          }
          results.set(column, row)
        } finally {
          await Promise.all(servers.map((s) => s.stop()))
        }
      }
    }
  }
} finally {
  postgres?.stop()
  cleanup(work)
}

const names = [...results.keys()]
const rows = workloads.flatMap((w) => [
  ...(repeat === 1 ? [] : Array.from({ length: repeat }, (_, i) => [
    `${w.name}, run ${i + 1}`,
    ...names.map((n) => cell(results.get(n)?.get(w.name)?.[i]))
  ])),
  [repeat === 1 ? w.name : `${w.name}, median`, ...names.map((n) => cell(median(results.get(n)?.get(w.name) ?? [])))]
])
console.log([
  `${machine()}; wrk, ${connections} connections over the processes, ${seconds} s per cell after a 1 s warm-up, wrk timeout 10 s; ` +
  `${surveys} surveys × ${responsesPerSurvey} responses; ${repeat} run(s) per cell, alternating; ` +
  `load average ${loadAtStart} at the start, ${loadNow()} at the end; ${new Date().toISOString().slice(0, 16)}Z`,
  "",
  table(["workload", ...names], rows)
].join("\n"))
if ([...results.values()].some((row) => [...row.values()].some((runs) => runs.some((l) => l.answered === 0 || l.non2xx > 0 || l.errors > 0)))) {
  console.log("Some requests were not answered 2xx within the cell's time (wrk waits up to 10 s): those cells are not comparable.")
  process.exitCode = 1
}
