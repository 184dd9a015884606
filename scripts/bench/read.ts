/**
 * `bun run bench:read`: the read path of the compiled service against the raw baseline
 * (scripts/bench/baseline.ts), side by side in one run on one dataset.
 *
 * Flags: --large (500 × 2,000 responses instead of 50 × 2,000), --fresh (rebuild the cached
 * dataset), --seconds N (5), --rounds N (3), --connections N (32), --warm-up N (seconds of load on
 * every endpoint, for each server, before the first is measured; 2), --no-write (leave
 * docs/performance.md alone), --only TEXT (load only the endpoints whose name contains TEXT; implies
 * --no-write), --otel (the service exports spans and metrics to a local OTLP sink on 127.0.0.1, as
 * with OTEL_EXPORTER_OTLP_ENDPOINT set; implies --no-write), --metrics (the service runs its
 * Prometheus listener, METRICS_PORT, scraped every second as Prometheus would; implies --no-write),
 * --database postgres (the same dataset in a throwaway PostgreSQL cluster, test/support/PostgresCluster.ts,
 * against the PostgreSQL baseline, scripts/bench/pgBaseline.ts; CPU per request is then also given
 * for each server's PostgreSQL backends, and the table goes between the `bench:read-pg` markers; after
 * each endpoint's rounds, one more round of each server at the same pace, half the project's rate,
 * for a second table: CPU per request at the same load).
 *
 * It prints figures and never fails on timing: the machines are shared and noisy.
 */
import { createHash } from "node:crypto"
import { cpus, loadavg, tmpdir } from "node:os"
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { BENCH_TOKEN, DEEP_SURVEY, DEEP_TOKEN, deepPosition, surveyId, writeDataset } from "./Dataset.js"
import { quotaFilePath } from "../../src/Quota/QuotaFileSql.js"
import { cpuTime, freePort, requireWrk, sleep, spawnedProcesses } from "./Processes.js"
import { backendsOf, type PgDatabases, preparePostgres } from "./PgDataset.js"

const { values: flags } = parseArgs({
  options: {
    large: { type: "boolean", default: false },
    fresh: { type: "boolean", default: false },
    seconds: { type: "string", default: "5" },
    rounds: { type: "string", default: "3" },
    connections: { type: "string", default: "32" },
    "warm-up": { type: "string", default: "2" },
    "no-write": { type: "boolean", default: false },
    otel: { type: "boolean", default: false },
    metrics: { type: "boolean", default: false },
    database: { type: "string", default: "sqlite" },
    only: { type: "string" }
  },
  strict: true
})

const root = join(import.meta.dir, "..", "..")
const binary = join(root, "dist", "survey-service")
const seconds = Number(flags.seconds)
const rounds = Number(flags.rounds)
const connections = Number(flags.connections)
const warmUpSeconds = Number(flags["warm-up"])
const dataset = { surveys: flags.large ? 500 : 50, responsesPerSurvey: 2_000, deepResponses: 250_025 }
if (flags.database !== "sqlite" && flags.database !== "postgres") throw new Error("--database takes sqlite or postgres")
const onPostgres = flags.database === "postgres"

/** The endpoints under load; adding one is one line. */
const endpoints: ReadonlyArray<{ readonly name: string; readonly path: string; readonly token?: string }> = [
  { name: "GET /surveys/{id}", path: `/api/v1/surveys/${surveyId(1)}` },
  { name: "GET /surveys?limit=25", path: "/api/v1/surveys?limit=25" },
  { name: "GET /surveys/{id}/questions", path: `/api/v1/surveys/${surveyId(1)}/questions` },
  { name: "GET /surveys/{id}/responses?limit=100", path: `/api/v1/surveys/${surveyId(1)}/responses?limit=100` },
  { name: "GET /surveys/{id}/analytics", path: `/api/v1/surveys/${surveyId(1)}/analytics` },
  { name: "GET /usage", path: "/api/v1/usage" }
]

// Page 10,000 at the default page size (25): the cursor after the 249,975th response.
const deepCursor = (() => {
  const p = deepPosition(9_999 * 25)
  return Buffer.from(JSON.stringify({ k: p.key, i: p.id, f: `responses:${DEEP_SURVEY}:all:` })).toString("base64url")
})()
const depth = [
  { name: "responses page 1", path: `/api/v1/surveys/${DEEP_SURVEY}/responses?limit=25`, token: DEEP_TOKEN },
  {
    name: "responses page 10,000",
    path: `/api/v1/surveys/${DEEP_SURVEY}/responses?limit=25&cursor=${deepCursor}`,
    token: DEEP_TOKEN
  }
] as const

// ---------------------------------------------------------------------------------------------

requireWrk("bench:read")

const { children, stopAll } = spawnedProcesses()

const run = (cmd: Array<string>, cwd = root) => {
  const result = Bun.spawnSync(cmd, { cwd, stdout: "pipe", stderr: "pipe" })
  if (result.exitCode !== 0) {
    throw new Error(`${cmd.join(" ")} failed (${result.exitCode}):\n${result.stderr.toString()}${result.stdout.toString()}`)
  }
  return result.stdout.toString()
}



/** Polls until `path` answers 200 (bounded: 20 s); returns the milliseconds since `since`. */
const waitFor = async (port: number, path: string, token: string, since: number, alive: () => boolean) => {
  const deadline = since + 20_000
  while (performance.now() < deadline) {
    if (!alive()) throw new Error(`the server for port ${port} exited before answering`)
    try {
      const res = await fetch(`http://127.0.0.1:${port}${path}`, { headers: { authorization: `Bearer ${token}` } })
      await res.arrayBuffer()
      if (res.status === 200) return performance.now() - since
    } catch {
      // not listening yet
    }
    await sleep(2)
  }
  throw new Error(`port ${port} did not answer ${path} within 20 s`)
}

interface Server {
  readonly name: string
  readonly port: number
  readonly pid: number
  readonly startMs: number
  /** On PostgreSQL: the server's own database in the cluster, whose backends' CPU time is counted too. */
  readonly database?: string
}

/** With --otel: a local OTLP/HTTP sink (scripts/bench/otlp-sink.ts) that reads and counts what the service exports. */
const otlpSink = (() => {
  if (!flags.otel) return undefined
  const port = freePort()
  const report = join(tmpdir(), `bench-otlp-${process.pid}.json`)
  const child = Bun.spawn(["bun", join(import.meta.dir, "otlp-sink.ts"), String(port), report], {
    cwd: root,
    stdout: "ignore",
    stderr: "inherit"
  })
  children.add(child)
  return {
    url: `http://127.0.0.1:${port}`,
    /** Stops the sink and answers what it received. */
    stop: async () => {
      child.kill("SIGTERM")
      await child.exited
      const counts: unknown = JSON.parse(readFileSync(report, "utf8"))
      rmSync(report, { force: true })
      return typeof counts === "object" && counts !== null && "exports" in counts && "bytes" in counts
        ? { exports: Number(counts.exports), bytes: Number(counts.bytes) }
        : { exports: 0, bytes: 0 }
    }
  }
})()

/** With --metrics: scrapes the service's /metrics every second until the benchmark ends, as Prometheus would. */
const scrapeEverySecond = (port: number) => {
  const timer = setInterval(() => {
    fetch(`http://127.0.0.1:${port}/metrics`).then((res) => res.arrayBuffer()).catch(() => undefined)
  }, 1000)
  // Does not keep the benchmark running once its work is done.
  timer.unref()
}

const start = async (
  name: string,
  cmd: Array<string>,
  port: number,
  env: Record<string, string> = {},
  database?: string
): Promise<Server> => {
  const t0 = performance.now()
  const child = Bun.spawn(cmd, {
    cwd: root,
    stdout: "ignore",
    stderr: "inherit",
    env: { ...process.env, LOG_FORMAT: "json", ...env }
  })
  children.add(child)
  const startMs = await waitFor(port, endpoints[0]!.path, BENCH_TOKEN, t0, () => child.exitCode === null)
  return { name, port, pid: child.pid, startMs, ...(database === undefined ? {} : { database }) }
}

const stop = async (server: Server) => {
  for (const child of children) {
    if (child.pid === server.pid) {
      child.kill()
      await child.exited
      children.delete(child)
    }
  }
}

const status = (pid: number, field: "VmHWM" | "VmRSS") => {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith(`${field}:`))
  const kb = Number(line?.replace(/[^0-9]/g, "") ?? Number.NaN)
  return kb / 1024
}

/** Resets the peak RSS (VmHWM) to the current RSS, so that each endpoint gets its own peak. */
const resetPeak = (pid: number) => {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5")
    return true
  } catch {
    return false
  }
}

// ---------------------------------------------------------------------------------------------

/** The files of a SQLite database of the service: the main file, the request quota's file beside it, and their WAL. */
const databaseFiles = ["", "-wal", "-shm", "-quota", "-quota-wal", "-quota-shm"]

/** The generator's hash: a cached dataset is used while it holds. */
const datasetStamp = () =>
  createHash("sha256")
    .update(readFileSync(join(import.meta.dir, "Dataset.ts")))
    .update(JSON.stringify(dataset))
    .digest("hex")
    .slice(0, 12)

const prepareDatabase = async () => {
  const stamp = datasetStamp()
  const dir = join(root, ".bench")
  const db = join(dir, `read-${dataset.surveys}x${dataset.responsesPerSurvey}-${stamp}.db`)
  if (existsSync(db) && !flags.fresh) {
    // Migrations added since the dataset was made; both servers then start from the same schema.
    run([binary, "migrate", "--db", db])
    console.log(`dataset: ${db} (cached; --fresh rebuilds it)`)
    return db
  }
  const work = mkdtempSync(join(tmpdir(), "bench-read-"))
  try {
    const t0 = performance.now()
    const files = await writeDataset(work, dataset)
    const t1 = performance.now()
    const scratch = join(work, "survey.db")
    for (const file of files) run([binary, "import", file, "--db", scratch])
    run([binary, "migrate", "--db", scratch])
    // Stored aggregates complete and the aggregator's position at the last change, so that the
    // service finds nothing to aggregate while it is measured.
    run([binary, "analytics", "rebuild", "--db", scratch])
    const t2 = performance.now()
    for (const suffix of databaseFiles) rmSync(db + suffix, { force: true })
    // Checkpoint so that the copy is one self-contained file (and its quota file another).
    const { Database } = await import("bun:sqlite")
    for (const file of [scratch, quotaFilePath(scratch)]) {
      const handle = new Database(file)
      handle.exec("PRAGMA wal_checkpoint(TRUNCATE)")
      handle.close()
    }
    renameSync(scratch, db)
    renameSync(quotaFilePath(scratch), quotaFilePath(db))
    console.log(
      `dataset: generated ${files.length} fixture files in ${((t1 - t0) / 1000).toFixed(1)} s, ` +
        `imported with \`survey-service import\` in ${((t2 - t1) / 1000).toFixed(1)} s -> ${db}`
    )
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
  return db
}

interface Answer {
  readonly status: number
  readonly body: string
  readonly headers: ReadonlyArray<string>
  readonly echoed: string | null
}

const fetchOnce = async (port: number, path: string, token: string): Promise<Answer> => {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    headers: { authorization: `Bearer ${token}`, "x-request-id": "bench-check-0001" }
  })
  const body = await res.text()
  const headers = [...res.headers.keys()].filter((h) => h !== "date").map((h) =>
    h === "x-request-id" ? h : `${h}: ${res.headers.get(h)}`
  ).sort()
  return { status: res.status, body, headers, echoed: res.headers.get("x-request-id") }
}

/**
 * Both servers must answer the same status, headers and JSON bytes before either is loaded.
 * Each counts every request against the same quota from the same stored counts, so the
 * RateLimit-* headers and /usage must agree too. The two answers are a few milliseconds apart;
 * one that straddles a second boundary can differ in RateLimit-Reset, so a difference is asked
 * again once (both servers count the retry).
 */
const verify = async (project: Server, baseline: Server) => {
  for (const e of [...endpoints, ...depth]) {
    const token = e.token ?? BENCH_TOKEN
    let a = await fetchOnce(project.port, e.path, token)
    let b = await fetchOnce(baseline.port, e.path, token)
    if (a.body !== b.body || a.headers.join("\n") !== b.headers.join("\n")) {
      a = await fetchOnce(project.port, e.path, token)
      b = await fetchOnce(baseline.port, e.path, token)
    }
    const problems: Array<string> = []
    if (a.status !== 200 || b.status !== 200) problems.push(`status ${a.status} vs ${b.status}`)
    if (a.body !== b.body) {
      const at = [...a.body].findIndex((c, i) => c !== b.body[i])
      problems.push(`bodies differ at byte ${at}: ${a.body.slice(at, at + 80)} | ${b.body.slice(at, at + 80)}`)
    }
    if (a.headers.join("\n") !== b.headers.join("\n")) problems.push(`headers ${a.headers} vs ${b.headers}`)
    if (a.echoed !== "bench-check-0001" || b.echoed !== "bench-check-0001") problems.push("x-request-id not echoed")
    if (problems.length > 0) throw new Error(`${e.name}: the servers disagree: ${problems.join("; ")}`)
    console.log(`check: ${e.name}: identical, ${a.body.length} bytes`)
  }
}

interface Load {
  readonly rps: number
  readonly requests: number
  /** CPU time (user + system) of the server per answered request, in microseconds. */
  readonly cpuUs: number
  /** On PostgreSQL: CPU time of the server's backends per answered request, in microseconds. */
  readonly dbCpuUs: number
  readonly p99: number
  readonly errors: number
}

const toMs = (value: string) => {
  const n = Number.parseFloat(value)
  return value.endsWith("us") ? n / 1000 : value.endsWith("ms") ? n : value.endsWith("s") ? n * 1000 : n
}


/** CPU time so far of each backend serving `database`, by pid. */
const backendTimes = (database: string | undefined) => {
  const times = new Map<number, number>()
  if (database === undefined) return times
  for (const pid of backendsOf(database)) {
    try {
      times.set(pid, cpuTime(pid))
    } catch {
      // ended meanwhile
    }
  }
  return times
}

/** The backends' CPU time since `before` (a backend started since counts whole; one that ended is lost). */
const backendCpuSince = (before: ReadonlyMap<number, number>, database: string | undefined) => {
  let total = 0
  for (const [pid, now] of backendTimes(database)) total += now - (before.get(pid) ?? 0)
  return total
}

/**
 * A wrk script after which each connection waits `ms` before its next request: both servers
 * offered the same pace (connections / (latency + ms) requests a second).
 */
const paceDir = mkdtempSync(join(tmpdir(), "bench-pace-"))
process.on("exit", () => rmSync(paceDir, { recursive: true, force: true }))
const pacing = (ms: number) => {
  const wait = Math.max(0, Math.round(ms))
  const file = join(paceDir, `pace-${wait}.lua`)
  writeFileSync(file, `function delay()\n  return ${wait}\nend\n`)
  return file
}

const wrk = (server: Server, path: string, token: string, duration: number, paceScript?: string): Load => {
  const port = server.port
  const cpuBefore = cpuTime(server.pid)
  const backendsBefore = backendTimes(server.database)
  const out = run([
    "/usr/bin/wrk",
    "-t2",
    `-c${connections}`,
    `-d${duration}s`,
    "--latency",
    ...(paceScript === undefined ? [] : ["-s", paceScript]),
    "-H",
    `Authorization: Bearer ${token}`,
    `http://127.0.0.1:${port}${path}`
  ])
  const cpu = cpuTime(server.pid) - cpuBefore
  const dbCpu = backendCpuSince(backendsBefore, server.database)
  const requests = Number(/(\d+) requests in/.exec(out)?.[1])
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1])
  const p99 = /\s99%\s+([\d.]+\w+)/.exec(out)?.[1]
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0)
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out)
  const errors = non2xx + (socket === null ? 0 : socket.slice(1).reduce((n, s) => n + Number(s), 0))
  if (!Number.isFinite(rps) || p99 === undefined) throw new Error(`could not read wrk's output:\n${out}`)
  return { rps, requests, cpuUs: cpu / requests, dbCpuUs: dbCpu / requests, p99: toMs(p99), errors }
}

const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

interface Side {
  readonly rps: number
  readonly cpuUs: number
  readonly dbCpuUs: number
  readonly p99: number
  readonly rss: number
  readonly errors: number
  /** On PostgreSQL: statements run per answered request (pg_stat_statements, warm-up included). */
  readonly statements?: number
}

interface Row {
  readonly name: string
  readonly project: Side
  readonly baseline: Side
  /**
   * On PostgreSQL: one round of each server at the same pace, each connection waiting after each
   * answer so that the offered rate is half the project's saturated one.
   */
  readonly paced?: { readonly delayMs: number; readonly project: Load; readonly baseline: Load }
}

/** A/B/A/B: each round loads the project, then the baseline, after one short warm-up of each. */
const measure = async (
  project: Server,
  baseline: Server,
  e: { name: string; path: string; token?: string },
  paceToo = false
): Promise<Row> => {
  const token = e.token ?? BENCH_TOKEN
  resetPeak(project.pid)
  resetPeak(baseline.pid)
  await pg?.resetStatements()
  const answered = { project: 0, baseline: 0 }
  const load = (server: Server, duration: number) => {
    const l = wrk(server, e.path, token, duration)
    answered[server === project ? "project" : "baseline"] += l.requests
    return l
  }
  load(project, 1)
  load(baseline, 1)
  const a: Array<Load> = []
  const b: Array<Load> = []
  for (let round = 0; round < rounds; round++) {
    a.push(load(project, seconds))
    b.push(load(baseline, seconds))
  }
  const perRequest = async (server: Server, requests: number) => {
    if (pg === undefined || server.database === undefined) return {}
    const { calls, top } = await pg.statements(server.database)
    console.log(`  ${server.name}: ${(calls / requests).toFixed(2)} statements per request\n    ${top.join("\n    ")}`)
    return { statements: calls / requests }
  }
  const summary = async (loads: ReadonlyArray<Load>, server: Server, requests: number): Promise<Side> => ({
    rps: median(loads.map((l) => l.rps)),
    cpuUs: median(loads.map((l) => l.cpuUs)),
    dbCpuUs: median(loads.map((l) => l.dbCpuUs)),
    p99: median(loads.map((l) => l.p99)),
    rss: status(server.pid, "VmHWM"),
    errors: loads.reduce((n, l) => n + l.errors, 0),
    ...(await perRequest(server, requests))
  })
  console.log(
    `${e.name}: project ${a.map((l) => l.rps.toFixed(0)).join("/")} req/s, ` +
      `baseline ${b.map((l) => l.rps.toFixed(0)).join("/")} req/s`
  )
  const projectSide = await summary(a, project, answered.project)
  const baselineSide = await summary(b, baseline, answered.baseline)
  const paced = pg === undefined || !paceToo ? undefined : (() => {
    const delayMs = (1000 * connections) / (projectSide.rps / 2)
    const script = pacing(delayMs)
    const pair = { delayMs, project: wrk(project, e.path, token, seconds, script), baseline: wrk(baseline, e.path, token, seconds, script) }
    console.log(`  paced (${delayMs.toFixed(0)} ms after each answer): project ${pair.project.rps.toFixed(0)}, baseline ${pair.baseline.rps.toFixed(0)} req/s`)
    return pair
  })()
  return { name: e.name, project: projectSide, baseline: baselineSide, ...(paced === undefined ? {} : { paced }) }
}

const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits })

/** PostgreSQL's table: each server's CPU and its backends' CPU per request, and the statements per request. */
const pgTable = (rows: ReadonlyArray<Row>) => [
  "| endpoint | project req/s | baseline req/s | ratio | project CPU µs/req, server + PostgreSQL | baseline CPU µs/req, server + PostgreSQL | CPU ratio, server | CPU ratio, server + PostgreSQL | statements/req, project / baseline | p99 ms, project / baseline | peak RSS MB, project / baseline |",
  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ...rows.map((r) =>
    `| ${r.name} | ${fmt(r.project.rps)} | ${fmt(r.baseline.rps)} | ${fmt(r.project.rps / r.baseline.rps, 2)} | ${
      fmt(r.project.cpuUs)
    } + ${fmt(r.project.dbCpuUs)} | ${fmt(r.baseline.cpuUs)} + ${fmt(r.baseline.dbCpuUs)} | ${
      fmt(r.baseline.cpuUs / r.project.cpuUs, 2)
    } | ${fmt((r.baseline.cpuUs + r.baseline.dbCpuUs) / (r.project.cpuUs + r.project.dbCpuUs), 2)} | ${
      fmt(r.project.statements ?? Number.NaN, 1)
    } / ${fmt(r.baseline.statements ?? Number.NaN, 1)} | ${fmt(r.project.p99, 1)} / ${fmt(r.baseline.p99, 1)} | ${
      fmt(r.project.rss)
    } / ${fmt(r.baseline.rss)} |${
      r.project.errors + r.baseline.errors > 0 ? ` (non-2xx/socket errors: ${r.project.errors}/${r.baseline.errors})` : ""
    }`
  )
]

/** PostgreSQL: the same endpoints offered the same pace, half the project's saturated rate. */
const pacedTable = (rows: ReadonlyArray<Row>) => [
  "| endpoint | wait after each answer, ms | project req/s | baseline req/s | project CPU µs/req, server + PostgreSQL | baseline CPU µs/req, server + PostgreSQL | CPU ratio, server + PostgreSQL |",
  "|---|---:|---:|---:|---:|---:|---:|",
  ...rows.flatMap((r) =>
    r.paced === undefined ? [] : [
      `| ${r.name} | ${fmt(r.paced.delayMs)} | ${fmt(r.paced.project.rps)} | ${fmt(r.paced.baseline.rps)} | ${
        fmt(r.paced.project.cpuUs)
      } + ${fmt(r.paced.project.dbCpuUs)} | ${fmt(r.paced.baseline.cpuUs)} + ${fmt(r.paced.baseline.dbCpuUs)} | ${
        fmt(
          (r.paced.baseline.cpuUs + r.paced.baseline.dbCpuUs) / (r.paced.project.cpuUs + r.paced.project.dbCpuUs),
          2
        )
      } |`
    ]
  )
]

const table = (rows: ReadonlyArray<Row>) => onPostgres ? pgTable(rows) : [
  "| endpoint | project req/s | baseline req/s | ratio | project CPU µs/req | baseline CPU µs/req | CPU ratio | project p99 ms | baseline p99 ms | project peak RSS MB | baseline peak RSS MB | RSS ratio |",
  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ...rows.map((r) =>
    `| ${r.name} | ${fmt(r.project.rps)} | ${fmt(r.baseline.rps)} | ${fmt(r.project.rps / r.baseline.rps, 2)} | ${
      fmt(r.project.cpuUs)
    } | ${fmt(r.baseline.cpuUs)} | ${fmt(r.baseline.cpuUs / r.project.cpuUs, 2)} | ${
      fmt(r.project.p99, 2)
    } | ${fmt(r.baseline.p99, 2)} | ${fmt(r.project.rss)} | ${fmt(r.baseline.rss)} | ${
      fmt(r.project.rss / r.baseline.rss, 2)
    } |${r.project.errors + r.baseline.errors > 0 ? ` (non-2xx/socket errors: ${r.project.errors}/${r.baseline.errors})` : ""}`
  )
]

// ---------------------------------------------------------------------------------------------

/**
 * Each server gets its own copy of the dataset: both count requests into the usage tables, and
 * both must start from the same counts for their RateLimit-* headers to be compared.
 */
const copiesOf = (db: string, work: string) => {
  const project = join(work, "project.db")
  const baseline = join(work, "baseline.db")
  for (const target of [project, baseline]) {
    for (const suffix of databaseFiles) rmSync(target + suffix, { force: true })
    copyFileSync(db, target)
    copyFileSync(quotaFilePath(db), quotaFilePath(target))
  }
  return { project, baseline }
}

/** With --database postgres: the cluster holding the dataset, once it is imported. */
let pg: PgDatabases | undefined

/**
 * Fills a throwaway PostgreSQL cluster with the dataset: imported the first time (about 6 minutes
 * on 2 cores) and kept as a dump in `.bench/` by the generator's hash, restored on the next runs.
 */
const preparePostgresDataset = async () => {
  const work = mkdtempSync(join(tmpdir(), "bench-read-pg-"))
  try {
    const t0 = performance.now()
    const dump = join(root, ".bench", `read-pg-${dataset.surveys}x${dataset.responsesPerSurvey}-${datasetStamp()}.dump`)
    if (flags.fresh) rmSync(dump, { force: true })
    const databases = await preparePostgres(dump, () => writeDataset(work, dataset), (args) => void run([binary, ...args]))
    console.log(`dataset: in PostgreSQL after ${((performance.now() - t0) / 1000).toFixed(1)} s (${dump}; --fresh imports it anew)`)
    return databases
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

/** The servers' database options: fresh copies of the dataset for each (a SQLite file each, or a PostgreSQL database each). */
const databasesFor = async (db: string, work: string) => {
  if (pg === undefined) {
    const files = copiesOf(db, work)
    return {
      project: ["--db", files.project],
      baseline: [join(import.meta.dir, "baseline.ts"), "--db", files.baseline],
      names: {}
    }
  }
  await pg.copies(["project", "baseline"])
  return {
    project: ["--database-url", pg.urlOf("project")],
    baseline: [join(import.meta.dir, "pgBaseline.ts"), "--database-url", pg.urlOf("baseline")],
    names: { project: "project", baseline: "baseline" }
  }
}

const startServers = async (db: string, work: string) => {
  const databases = await databasesFor(db, work)
  const projectPort = freePort()
  const metricsPort = flags.metrics ? freePort() : undefined
  const project = await start(
    "project",
    [binary, "serve", "--port", String(projectPort), ...databases.project],
    projectPort,
    {
      ...(otlpSink === undefined ? {} : { OTEL_EXPORTER_OTLP_ENDPOINT: otlpSink.url, OTEL_SERVICE_NAME: "survey-service-bench" }),
      ...(metricsPort === undefined ? {} : { METRICS_PORT: String(metricsPort) })
    },
    databases.names.project
  )
  if (metricsPort !== undefined) scrapeEverySecond(metricsPort)
  const baselinePort = freePort()
  const baseline = await start(
    "baseline",
    ["bun", ...databases.baseline, "--port", String(baselinePort)],
    baselinePort,
    {},
    databases.names.baseline
  )
  return { project, baseline }
}

const loadAtStart = loadavg()[0]?.toFixed(1) ?? "?"

const main = async () => {
  console.log("building the binary (bun run build)")
  run(["bun", "run", "build"])
  mkdirSync(join(root, ".bench"), { recursive: true })
  if (onPostgres) pg = await preparePostgresDataset()
  const db = onPostgres ? "" : await prepareDatabase()
  const work = mkdtempSync(join(root, ".bench", "run-"))
  process.on("exit", () => rmSync(work, { recursive: true, force: true }))

  // Start to first answered API request, three times each, alternating; medians reported.
  const startMs = { project: [] as Array<number>, baseline: [] as Array<number> }
  for (let i = 0; i < 3; i++) {
    const { baseline, project } = await startServers(db, work)
    startMs.project.push(project.startMs)
    startMs.baseline.push(baseline.startMs)
    await stop(project)
    await stop(baseline)
  }

  const { baseline, project } = await startServers(db, work)
  await verify(project, baseline)
  const peakPerEndpoint = resetPeak(project.pid) && resetPeak(baseline.pid)
  const selected = (e: { readonly name: string }) => flags.only === undefined || e.name.includes(flags.only)
  // Both servers answer every endpoint for a while first: the just-in-time compiler's work on a
  // new process's code is start-up (measured above), not the cost of a request.
  if (warmUpSeconds > 0) {
    for (const e of [...endpoints, ...depth].filter(selected)) {
      for (const server of [project, baseline]) wrk(server, e.path, e.token ?? BENCH_TOKEN, warmUpSeconds)
    }
  }
  const rows: Array<Row> = []
  for (const e of endpoints.filter(selected)) rows.push(await measure(project, baseline, e, true))
  const deep: Array<Row> = []
  for (const e of depth.filter(selected)) deep.push(await measure(project, baseline, e))
  const [page1, page10k] = deep
  stopAll()

  const lines = [
    `Measured ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC on ${cpus().length} cores ` +
      `(${cpus()[0]?.model.trim() ?? "unknown CPU"}), Bun ${Bun.version}. Dataset: ${dataset.surveys} surveys × ` +
      `${fmt(dataset.responsesPerSurvey)} responses (ten questions of every type, plus a section), and one survey ` +
      `of ${fmt(dataset.deepResponses)} responses for the cursor depth test. Load: wrk, 2 threads, ${connections} ` +
      `connections; after ${warmUpSeconds} s of load on every endpoint for each server, ${rounds} rounds of ${seconds} s ` +
      `per server, alternating project/baseline; medians. ` +
      `The load generator shares the machine's cores with the server under test` +
      `${onPostgres ? ", and so does PostgreSQL" : ""}; load average ${loadAtStart} at the start, ${
        loadavg()[0]?.toFixed(1) ?? "?"
      } at the end.`,
    "",
    ...(onPostgres
      ? [
        "Both servers on one throwaway PostgreSQL cluster (127.0.0.1, `fsync` off), each on its own copy of " +
        "the imported dataset, with a pool of 10 connections. The baseline is plain `Bun.serve` and the `pg` " +
        "driver with prepared statements (scripts/bench/pgBaseline.ts). PostgreSQL CPU is the user + system " +
        "CPU time of the backends serving each server's database (/proc), per answered request; statements per " +
        "request are counted by `pg_stat_statements`, transaction control included."
      ]
      : [
        "Storage layout, the same file for both servers (migration 0009): `responses` clustered by " +
        "`(survey_id, created_at, id)` (`WITHOUT ROWID`), each row carrying its answers rendered in wire form " +
        "(`answers_json`, used while current for the survey's questions). A responses page is one statement on " +
        "both sides: the service builds the page's JSON text in one pass over value rows and hands it to the " +
        "platform as it is; the baseline does the same with plain `bun:sqlite` and `Bun.serve`."
      ]),
    "",
    ...table(rows),
    "",
    "CPU µs/req is the server process's user + system CPU time over a round divided by the requests it answered " +
    "(/proc/PID/stat); CPU ratio = baseline / project, each server at the rate the connections drive it to (its " +
    "saturation). It is much less sensitive than req/s to other work on the machine.",
    "",
    ...(onPostgres
      ? [
        "The same endpoints offered the same pace: each of the 32 connections waits after each answer (a wrk " +
        "script's `delay`), so that both servers are offered half the project's rate above, one round of " +
        `${seconds} s each. A server answering fewer requests a second spends more CPU on each (its process and ` +
        "PostgreSQL's backends wake for fewer requests at a time), so the two are compared here at the same load:",
        "",
        ...pacedTable(rows),
        ""
      ]
      : []),
    `Peak RSS is VmHWM from /proc/PID/status${
      peakPerEndpoint ? ", reset before each endpoint (so it is that endpoint's peak)" : " (cumulative over the run)"
    }.`,
    "",
    "Keyset cursor depth (`GET /surveys/{id}/responses?limit=25`, one survey of " +
    `${fmt(dataset.deepResponses)} responses):`,
    "",
    ...table(deep),
    "",
    page1 !== undefined && page10k !== undefined
      ? `Page 10,000 / page 1: CPU per request project ${
        fmt(page10k.project.cpuUs / page1.project.cpuUs, 2)
      }, baseline ${fmt(page10k.baseline.cpuUs / page1.baseline.cpuUs, 2)}; req/s project ${
        fmt(page10k.project.rps / page1.project.rps, 2)
      }, baseline ${fmt(page10k.baseline.rps / page1.baseline.rps, 2)}; p99 project ${
        fmt(page10k.project.p99 / page1.project.p99, 2)
      }, baseline ${fmt(page10k.baseline.p99 / page1.baseline.p99, 2)}.`
      : "",
    "",
    `Start to first answered API request (medians of 3 starts): project binary ${
      fmt(median(startMs.project))
    } ms (${startMs.project.map((n) => fmt(n)).join(", ")}), baseline ${fmt(median(startMs.baseline))} ms ` +
    `(${startMs.baseline.map((n) => fmt(n)).join(", ")}).`
  ]
  console.log(`\n${lines.join("\n")}`)
  if (otlpSink !== undefined) {
    const counts = await otlpSink.stop()
    console.log(
      `\nThe service exported to the local OTLP sink: ${fmt(counts.exports)} requests, ${fmt(counts.bytes / 1e6, 1)} MB.`
    )
  }

  if (!flags["no-write"] && !flags.otel && !flags.metrics && flags.only === undefined) {
    const doc = join(root, "docs", "performance.md")
    const marker = onPostgres ? "bench:read-pg" : "bench:read"
    const begin = `<!-- ${marker}:begin -->`
    const end = `<!-- ${marker}:end -->`
    const block = `${begin}\n${lines.join("\n")}\n${end}`
    const current = existsSync(doc) ? readFileSync(doc, "utf8") : `# Performance\n\n${begin}\n${end}\n`
    const from = current.indexOf(begin)
    const to = current.indexOf(end)
    const next = from >= 0 && to > from
      ? current.slice(0, from) + block + current.slice(to + end.length)
      : `${current.trimEnd()}\n\n${block}\n`
    mkdirSync(join(root, "docs"), { recursive: true })
    writeFileSync(doc, next)
    console.log(`\nwrote the table to ${doc}`)
  }
}

await main().finally(() => {
  stopAll()
  pg?.stop()
})
