/**
 * `bun run bench:completions`: respondent completions (`POST /respond/v1/responses` with a survey
 * page's token, one answer, finished) on PostgreSQL, the compiled service against the raw baseline
 * (scripts/bench/pgCompletionsBaseline.ts), side by side in one run, alternating rounds.
 *
 * Cells: one survey / 20 surveys taken in turn by each request (scripts/bench/CompletionSurveys.ts)
 * × one process / two processes (each server then runs two processes on its one database; each
 * process gets its own wrk with half the connections, and the figures are their sums). Each server
 * has its own copy of the dataset in one throwaway cluster (scripts/bench/PgDataset.ts, the dump
 * cached in .bench/).
 *
 * Both sides count every completion against the respondent limits, lifted to 1,000,000 a minute.
 *
 * Before the load, the two servers must agree: the same status, headers and body for a completion
 * (its response id masked) and for refused ones, the same additions to the request counters
 * (`usage_daily`, `usage_burst`: none, as both keep the respondent limits in memory), the same
 * 429 past each limit (servers started with it set to 1, the second request; the wait masked),
 * and the same rows for one identical completion, column by column with ids and instants masked.
 * A difference stops the run.
 *
 * Flags: --seconds N (5), --rounds N (3), --connections N (32), --warm-up N (seconds of load on
 * each side before a cell's rounds; 3), --only one|spread,
 * --processes 1|2, --no-write (leave docs/performance.md alone; implied by --only and
 * --processes), --fresh (import the dataset anew).
 *
 * It prints figures and never fails on timing: the machines are shared and noisy.
 */
import { createHash } from "node:crypto"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { Schema } from "effect"
import * as Pg from "pg"
import { completionBody, completionFixture, completionQuestion, completionScript, completionSurvey, respondentToken, SPREAD } from "./CompletionSurveys.js"
import { writeDataset } from "./Dataset.js"
import { backendsOf, type PgDatabases, preparePostgres } from "./PgDataset.js"
import { cpuTime, freePort, requireWrk, sleep, spawnedProcesses } from "./Processes.js"

const { values: flags } = parseArgs({
  options: {
    seconds: { type: "string", default: "5" },
    rounds: { type: "string", default: "3" },
    connections: { type: "string", default: "32" },
    "warm-up": { type: "string", default: "3" },
    only: { type: "string" },
    processes: { type: "string" },
    "no-write": { type: "boolean", default: false },
    fresh: { type: "boolean", default: false }
  },
  strict: true
})

const root = join(import.meta.dir, "..", "..")
const binary = join(root, "dist", "survey-service")
const seconds = Math.max(1, Number(flags.seconds))
const rounds = Math.max(1, Number(flags.rounds))
const connections = Math.max(2, Number(flags.connections))
const warmUpSeconds = Math.max(1, Number(flags["warm-up"]))
if (flags.only !== undefined && flags.only !== "one" && flags.only !== "spread") throw new Error("--only takes one or spread")
if (flags.processes !== undefined && flags.processes !== "1" && flags.processes !== "2") throw new Error("--processes takes 1 or 2")
const spreads = [1, SPREAD].filter((n) => flags.only === undefined || (flags.only === "one") === (n === 1))
const processCounts = [1, 2].filter((n) => flags.processes === undefined || Number(flags.processes) === n)
const dataset = { surveys: 20, responsesPerSurvey: 500, deepResponses: 0 }
// Every simulated respondent comes from 127.0.0.1 to one survey, far faster than real ones: the
// limits are lifted on both sides, which still count every completion against them.
const limitsEnv = { RESPONDENT_LIMIT_PER_ADDRESS: "1000000", RESPONDENT_LIMIT_PER_SURVEY: "1000000" }

requireWrk("bench:completions")
/** The throwaway cluster, once started: stopped at the end, and on Ctrl-C before the servers' handler exits. */
let pg: PgDatabases | undefined
process.once("SIGINT", () => pg?.stop())
const { children, stopAll } = spawnedProcesses()

const run = (cmd: Array<string>) => {
  const result = Bun.spawnSync(cmd, { cwd: root, stdout: "pipe", stderr: "pipe" })
  if (result.exitCode !== 0) {
    throw new Error(`${cmd.join(" ")} failed (${result.exitCode}):\n${result.stderr.toString()}${result.stdout.toString()}`)
  }
  return result.stdout.toString()
}

const loadNow = () => loadavg()[0]?.toFixed(1) ?? "?"
const loadAtStart = loadNow()

// --- Servers ------------------------------------------------------------------------------------

interface Server {
  readonly url: string
  readonly pid: number
}

interface Side {
  readonly name: "project" | "baseline"
  /** Its own database in the cluster, whose backends' CPU time and statements are counted. */
  readonly database: string
  readonly servers: ReadonlyArray<Server>
}

const startOne = async (cmd: Array<string>, port: number, env: Record<string, string>): Promise<Server> => {
  const child = Bun.spawn(cmd, {
    cwd: root,
    stdout: "ignore",
    stderr: "inherit",
    env: { ...process.env, LOG_FORMAT: "json", LOG_LEVEL: "warn", ...env }
  })
  children.add(child)
  const url = `http://127.0.0.1:${port}`
  for (let i = 0; i < 400; i++) {
    if (child.exitCode !== null) throw new Error(`${cmd.join(" ")} exited before answering`)
    try {
      if ((await fetch(`${url}/healthz`)).ok) return { url, pid: child.pid }
    } catch {
      // not listening yet
    }
    await sleep(50)
  }
  throw new Error(`${cmd.join(" ")} did not answer /healthz within 20 s`)
}

/** One process of each side, with the respondent limits `env` sets. */
const startPair = async (pg: PgDatabases, env: Record<string, string>) => {
  const port = freePort()
  const project = await startOne([binary, "serve", "--database-url", pg.urlOf("project"), "--port", String(port)], port, env)
  const basePort = freePort()
  const baseline = await startOne(
    ["bun", join(import.meta.dir, "pgCompletionsBaseline.ts"), "--database-url", pg.urlOf("baseline"), "--port", String(basePort)],
    basePort,
    env
  )
  return [project, baseline] as const
}

/** Stops the processes of `servers` and waits for them to exit. */
const stopServers = async (servers: ReadonlyArray<Server>) => {
  const stopping = [...children].filter((child) => servers.some((s) => s.pid === child.pid))
  for (const child of stopping) {
    child.kill()
    children.delete(child)
  }
  await Promise.all(stopping.map((child) => child.exited))
}

const startSides = async (pg: PgDatabases, processes: number): Promise<ReadonlyArray<Side>> => {
  await pg.copies(["project", "baseline"])
  const project: Array<Server> = []
  const baseline: Array<Server> = []
  for (let i = 0; i < processes; i++) {
    const [p, b] = await startPair(pg, limitsEnv)
    project.push(p)
    baseline.push(b)
  }
  return [{ name: "project", database: "project", servers: project }, { name: "baseline", database: "baseline", servers: baseline }]
}

// --- Parity -------------------------------------------------------------------------------------

const ids = /\b(rsp|evt)_[A-Za-z0-9]{20}\b/g
const instants = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/g
const masked = (text: string) => text.replace(ids, "$1_…").replace(instants, "<instant>")

interface Answer {
  readonly status: number
  readonly headers: string
  readonly body: string
}

const post = async (server: Server, token: string, body: string, contentType = "application/json"): Promise<Answer> => {
  const res = await fetch(`${server.url}/respond/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": contentType, "x-request-id": "bench-check-0001" },
    body
  })
  const text = await res.text()
  const headers = [...res.headers.keys()].filter((h) => h !== "date").map((h) => `${h}: ${res.headers.get(h)}`).sort().join("\n")
  return { status: res.status, headers: masked(headers), body: text }
}

/** Each row as `column=value` lines, ordered by column, without the sequence numbers each database gives out. */
const rowText = (rows: ReadonlyArray<unknown>) =>
  rows.map((row) =>
    typeof row === "object" && row !== null
      ? Object.entries(row).filter(([k]) => k !== "seq").sort(([a], [b]) => a < b ? -1 : 1).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(", ")
      : String(row)
  ).join("\n")

/** What one completion wrote, as text, and the instants it carries (which must all be one). */
const written = async (url: string, responseId: string, surveyId: string) => {
  const c = new Pg.Client({ connectionString: url })
  await c.connect()
  try {
    const tables = {
      responses: (await c.query("SELECT * FROM responses WHERE id = $1", [responseId])).rows,
      answers: (await c.query("SELECT * FROM answers WHERE response_id = $1 ORDER BY question_id", [responseId])).rows,
      respondent_responses: (await c.query("SELECT * FROM respondent_responses WHERE response_id = $1", [responseId])).rows,
      response_changes: (await c.query("SELECT * FROM response_changes WHERE response_id = $1", [responseId])).rows,
      events: (await c.query("SELECT * FROM events WHERE response_id = $1 ORDER BY seq", [responseId])).rows,
      survey: (await c.query("SELECT id, response_count, answer_layout, updated_at FROM surveys WHERE id = $1", [surveyId])).rows
    }
    const { response_changes: changes, survey, ...kept } = tables
    const all = Object.entries(kept).map(([name, rows]) => `${name}:\n${rowText(rows)}`).join("\n")
    // The response's stamps, its change row's, and those of the response each event carries.
    const carried = tables.events.flatMap((row: unknown) =>
      typeof row === "object" && row !== null && "payload" in row && typeof row.payload === "string"
        ? [/"response":\{.*"answers"/.exec(row.payload)?.[0] ?? ""]
        : []
    )
    const stamp = new Set(
      [rowText(tables.responses), rowText(tables.response_changes), ...carried].flatMap((t) => [...t.matchAll(instants)].map((m) => m[0]))
    )
    // The survey's row unmasked: a completion changes its count only.
    return { text: `${masked(all)}\nsurvey:\n${rowText(survey)}`, changes: masked(rowText(changes)), stamp, rows: tables.responses.length }
  } finally {
    await c.end()
  }
}

const differ = (what: string, a: string, b: string) => {
  if (a === b) return
  const at = [...a].findIndex((c, i) => c !== b[i])
  throw new Error(`${what}: the servers disagree at character ${at}:\n  project:  ${a.slice(Math.max(0, at - 80), at + 120)}\n  baseline: ${b.slice(Math.max(0, at - 80), at + 120)}`)
}

const CounterRows = Schema.Array(Schema.Struct({ account_id: Schema.String, count: Schema.NumberFromString, whole: Schema.Boolean }))

/**
 * A side's respondent counters: per counter id, its day counts and its burst counts stamped from
 * `since` (ms) on. Every burst stamp must fall on a whole second, where both sides count a request.
 */
const counters = async (c: Pg.Client, since: number) => {
  const days = Schema.decodeUnknownSync(CounterRows)(
    (await c.query(`SELECT account_id, SUM(count)::text AS count, true AS whole FROM usage_daily
      WHERE account_id LIKE 'respondent-%' GROUP BY account_id`)).rows
  )
  const bursts = Schema.decodeUnknownSync(CounterRows)(
    (await c.query(
      `SELECT account_id, SUM(count)::text AS count, bool_and(at_ms % 1000 = 0) AS whole FROM usage_burst
        WHERE account_id LIKE 'respondent-%' AND at_ms >= $1 GROUP BY account_id`,
      [since]
    )).rows
  )
  const held = new Map<string, { day: number; burst: number }>()
  for (const row of days) held.set(row.account_id, { day: row.count, burst: 0 })
  for (const row of bursts) {
    if (!row.whole) throw new Error(`counters: ${row.account_id} has a burst stamp within a second`)
    held.set(row.account_id, { day: held.get(row.account_id)?.day ?? 0, burst: row.count })
  }
  return held
}

type Counters = Awaited<ReturnType<typeof counters>>

/** What a request added to the counters, as text. */
const countedBy = (before: Counters, after: Counters) =>
  [...after].flatMap(([id, now]) => {
    const was = before.get(id) ?? { day: 0, burst: 0 }
    return now.day === was.day && now.burst === was.burst ? [] : [`${id} +${now.day - was.day} (burst +${now.burst - was.burst})`]
  }).sort().join(", ") || "nothing"

/** A 429's wait, which depends on the second each side counted its last request in: masked, once checked. */
const waitMasked = (answer: Answer) => {
  const wait = Number(/retry-after: (\d+)/.exec(answer.headers)?.[1])
  if (!(wait >= 1 && wait <= 60)) throw new Error(`a 429 with Retry-After ${wait}`)
  return { ...answer, headers: answer.headers.replace(/retry-after: \d+/, "retry-after: <s>"), body: answer.body.replace(/retry in \d+ s/, "retry in <s> s") }
}

/** The two servers answer, write and count the same, or the run stops. */
const checkParity = async (pg: PgDatabases, project: Server, baseline: Server, token: string) => {
  const survey = completionSurvey(1)
  const question = completionQuestion(1)
  const cases: ReadonlyArray<{ readonly name: string; readonly token: string; readonly body: string; readonly contentType?: string }> = [
    { name: "a completion", token, body: completionBody(1) },
    { name: "a forged token", token: `${token.slice(0, -4)}AAAA`, body: completionBody(1) },
    { name: "an unknown question", token, body: JSON.stringify({ answers: [{ questionId: "q_nope", values: ["x"] }], finished: true }) },
    { name: "an empty text", token, body: JSON.stringify({ answers: [{ questionId: question, values: [" "] }] }) },
    { name: "a required-free finish without answers", token, body: JSON.stringify({ finished: true }) },
    { name: "an unknown field", token, body: JSON.stringify({ answers: [], finished: true, extra: 1 }) },
    { name: "a value of the wrong type", token, body: JSON.stringify({ answers: [{ questionId: question, values: "x" }] }) },
    { name: "a body that is not JSON", token, body: "{" },
    { name: "a body nested too deep", token, body: `{"answers":${"[".repeat(70)}${"]".repeat(70)}}` },
    { name: "another content type", token, body: completionBody(1), contentType: "text/plain" }
  ]
  const clients = [new Pg.Client({ connectionString: pg.urlOf("project") }), new Pg.Client({ connectionString: pg.urlOf("baseline") })] as const
  await Promise.all(clients.map((c) => c.connect()))
  const since = Date.now() - (Date.now() % 1000)
  const bothCounters = () => Promise.all([counters(clients[0], since), counters(clients[1], since)])
  /** Sends one request to each side; they must answer the same and count it the same. */
  const compare = async (name: string, servers: readonly [Server, Server], c: { readonly token: string; readonly body: string; readonly contentType?: string }) => {
    const [before, beforeBaseline] = await bothCounters()
    let a = await post(servers[0], c.token, c.body, c.contentType)
    let b = await post(servers[1], c.token, c.body, c.contentType)
    const [after, afterBaseline] = await bothCounters()
    differ(`${name}: status`, String(a.status), String(b.status))
    if (a.status === 429) [a, b] = [waitMasked(a), waitMasked(b)]
    differ(`${name}: headers`, a.headers, b.headers)
    differ(`${name}: body`, masked(a.body), masked(b.body))
    const counted = countedBy(before, after)
    differ(`${name}: respondent counters`, counted, countedBy(beforeBaseline, afterBaseline))
    console.log(`check: ${name}: ${a.status}, identical (${a.body.length} bytes); counted: ${counted}`)
    return [a, b] as const
  }
  const created: Array<readonly [string, string]> = []
  try {
    for (const c of cases) {
      const [a, b] = await compare(c.name, [project, baseline], c)
      if (a.status === 201) {
        const id = (text: string) => /rsp_[A-Za-z0-9]{20}/.exec(text)?.[0] ?? ""
        created.push([id(a.body), id(b.body)])
      }
    }
    // Each side counts in its process's memory: with a limit of 1, of two requests from one address the second is refused.
    const low = [
      { name: "past the survey's limit", env: { ...limitsEnv, RESPONDENT_LIMIT_PER_SURVEY: "1" } },
      { name: "past the address's limit", env: { ...limitsEnv, RESPONDENT_LIMIT_PER_ADDRESS: "1" } }
    ]
    for (const l of low) {
      const pair = await startPair(pg, l.env)
      try {
        const [first] = await compare(`${l.name}: the first request (servers started with it set to 1)`, pair, { token, body: completionBody(1) })
        if (first.status !== 201) throw new Error(`${l.name}: the first request answered ${first.status}, not 201`)
        const [a] = await compare(`${l.name} (servers started with it set to 1)`, pair, { token, body: completionBody(1) })
        if (a.status !== 429) throw new Error(`${l.name}: answered ${a.status}, not 429`)
      } finally {
        await stopServers(pair)
      }
    }
  } finally {
    await Promise.all(clients.map((c) => c.end()))
  }
  for (const [p, b] of created) {
    const mine = await written(pg.urlOf("project"), p, survey)
    const theirs = await written(pg.urlOf("baseline"), b, survey)
    if (mine.rows !== 1 || theirs.rows !== 1) throw new Error(`rows: the response is not stored on both sides (${mine.rows} / ${theirs.rows})`)
    differ("rows", mine.text, theirs.text)
    // The service's aggregator deletes the change rows it has read, which it may have done by now.
    if (theirs.changes === "") throw new Error("rows: the baseline wrote no response_changes row")
    if (mine.changes !== "") differ("response_changes", mine.changes, theirs.changes)
    for (const [side, w] of [["project", mine], ["baseline", theirs]] as const) {
      if (w.stamp.size !== 1) throw new Error(`rows: the ${side}'s completion carries several instants: ${[...w.stamp].join(", ")}`)
    }
    console.log(
      `check: the rows of a completion: identical with ids and instants masked, one instant on each side${
        mine.changes === "" ? " (the service's change row already read by its aggregator)" : ""
      }\n${mine.text.split("\n").map((l) => `  ${l}`).join("\n")}`
    )
  }
}

// --- Load ---------------------------------------------------------------------------------------

/**
 * wrk's script: completions to the first `surveys` surveys, taken in turn by each request. At the
 * end it writes one line: requests, seconds, p99 in µs, and the failures (socket errors and
 * non-2xx answers).
 */
const script = (dir: string, tokens: ReadonlyArray<string>, surveys: number) => {
  const file = join(dir, `complete-${surveys}.lua`)
  writeFileSync(
    file,
    completionScript(tokens.slice(0, surveys), [
      "done = function(summary, latency, requests)",
      "  local e = summary.errors",
      `  io.write(string.format("completions: %d %.6f %.1f %d\\n", summary.requests, summary.duration / 1e6, latency:percentile(99),`,
      "    e.connect + e.read + e.write + e.timeout + e.status))",
      "end"
    ])
  )
  return file
}

const wrkOnce = async (server: Server, file: string, conns: number, duration: number) => {
  const child = Bun.spawn(
    ["/usr/bin/wrk", "-t1", `-c${conns}`, `-d${duration}s`, "--timeout", "10s", "-s", file, `${server.url}/respond/v1/responses`],
    { stdout: "pipe", stderr: "pipe" }
  )
  const out = await new Response(child.stdout).text()
  await child.exited
  const [, requests, elapsed, p99Us, errors] = /completions: (\d+) ([\d.]+) ([\d.]+) (\d+)/.exec(out) ?? []
  if (requests === undefined || elapsed === undefined || p99Us === undefined || errors === undefined) {
    throw new Error(`could not read wrk's output:\n${out}`)
  }
  return { rps: Number(requests) / Number(elapsed), requests: Number(requests), p99: Number(p99Us) / 1000, errors: Number(errors) }
}

/** A round of one side: wrk's figures summed over its processes, and CPU µs per answered request of the processes and of their backends. */
type Load = Awaited<ReturnType<typeof wrkOnce>> & { readonly cpuUs: number; readonly dbCpuUs: number }

const backendTimes = (database: string) => {
  const times = new Map<number, number>()
  for (const pid of backendsOf(database)) {
    try {
      times.set(pid, cpuTime(pid))
    } catch {
      // ended meanwhile
    }
  }
  return times
}

/** Loads every process of a side at once, each with its share of the connections; the sums, and the slowest p99. */
const load = async (side: Side, file: string, duration: number): Promise<Load> => {
  const share = Math.max(1, Math.floor(connections / side.servers.length))
  const cpuBefore = side.servers.map((s) => cpuTime(s.pid))
  const backendsBefore = backendTimes(side.database)
  const loads = await Promise.all(side.servers.map((s) => wrkOnce(s, file, share, duration)))
  const cpu = side.servers.reduce((sum, s, i) => sum + cpuTime(s.pid) - (cpuBefore[i] ?? 0), 0)
  let dbCpu = 0
  for (const [pid, now] of backendTimes(side.database)) dbCpu += now - (backendsBefore.get(pid) ?? 0)
  const requests = loads.reduce((n, l) => n + l.requests, 0)
  return {
    rps: loads.reduce((n, l) => n + l.rps, 0),
    requests,
    cpuUs: cpu / requests,
    dbCpuUs: dbCpu / requests,
    p99: Math.max(...loads.map((l) => l.p99)),
    errors: loads.reduce((n, l) => n + l.errors, 0)
  }
}

/** The middle of the rounds' figures (the lower middle for an even count). */
const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] ?? Number.NaN

interface Figures {
  readonly rps: number
  readonly cpuUs: number
  readonly dbCpuUs: number
  readonly p99: number
  readonly statements: number
  readonly errors: number
}

interface Row {
  readonly name: string
  readonly project: Figures
  readonly baseline: Figures
}

/**
 * One cell: a warm-up of each side (the compiler's work on a new process's code is start-up, not
 * the cost of a completion), then `rounds` rounds alternating project/baseline; medians.
 */
const measure = async (pg: PgDatabases, sides: ReadonlyArray<Side>, file: string, name: string): Promise<Row> => {
  await pg.resetStatements()
  const answered = new Map<Side, number>()
  const loads = new Map<Side, Array<Load>>()
  const once = async (side: Side, duration: number) => {
    const l = await load(side, file, duration)
    answered.set(side, (answered.get(side) ?? 0) + l.requests)
    return l
  }
  for (const side of sides) await once(side, warmUpSeconds)
  for (let round = 0; round < rounds; round++) {
    for (const side of sides) loads.set(side, [...(loads.get(side) ?? []), await once(side, seconds)])
  }
  const figures = async (side: Side): Promise<Figures> => {
    const ls = loads.get(side) ?? []
    const { calls, top } = await pg.statements(side.database)
    const requests = answered.get(side) ?? 0
    console.log(`  ${side.name}: ${(calls / requests).toFixed(2)} statements per request\n    ${top.join("\n    ")}`)
    return {
      rps: median(ls.map((l) => l.rps)),
      cpuUs: median(ls.map((l) => l.cpuUs)),
      dbCpuUs: median(ls.map((l) => l.dbCpuUs)),
      p99: median(ls.map((l) => l.p99)),
      statements: calls / requests,
      errors: ls.reduce((n, l) => n + l.errors, 0)
    }
  }
  const [project, baseline] = sides
  if (project === undefined || baseline === undefined) throw new Error("two sides expected")
  console.log(
    `${name}: project ${(loads.get(project) ?? []).map((l) => l.rps.toFixed(0)).join("/")} req/s, ` +
      `baseline ${(loads.get(baseline) ?? []).map((l) => l.rps.toFixed(0)).join("/")} req/s (load average ${loadNow()})`
  )
  return { name, project: await figures(project), baseline: await figures(baseline) }
}

const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits })

const table = (rows: ReadonlyArray<Row>) => [
  "| cell | project req/s | baseline req/s | req/s ratio | project CPU µs/req, server + PostgreSQL | baseline CPU µs/req, server + PostgreSQL | CPU ratio, server | CPU ratio, server + PostgreSQL | statements/req, project / baseline | p99 ms, project / baseline |",
  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ...rows.map((r) =>
    `| ${r.name} | ${fmt(r.project.rps)} | ${fmt(r.baseline.rps)} | ${fmt(r.baseline.rps / r.project.rps, 2)} | ${fmt(r.project.cpuUs)} + ${
      fmt(r.project.dbCpuUs)
    } | ${fmt(r.baseline.cpuUs)} + ${fmt(r.baseline.dbCpuUs)} | ${fmt(r.baseline.cpuUs / r.project.cpuUs, 2)} | ${
      fmt((r.baseline.cpuUs + r.baseline.dbCpuUs) / (r.project.cpuUs + r.project.dbCpuUs), 2)
    } | ${fmt(r.project.statements, 1)} / ${fmt(r.baseline.statements, 1)} | ${fmt(r.project.p99, 1)} / ${fmt(r.baseline.p99, 1)} |${
      r.project.errors + r.baseline.errors > 0 ? ` (non-2xx/socket errors: ${r.project.errors}/${r.baseline.errors})` : ""
    }`
  )
]

// --- The run ------------------------------------------------------------------------------------

/** The dump's name follows what fills it: the generator, the completion surveys and the dataset's size. */
const datasetStamp = () =>
  createHash("sha256")
    .update(readFileSync(join(import.meta.dir, "Dataset.ts")))
    .update(readFileSync(join(import.meta.dir, "CompletionSurveys.ts")))
    .update(JSON.stringify(dataset))
    .digest("hex")
    .slice(0, 12)

const prepare = async (work: string) => {
  const dump = join(root, ".bench", `completions-pg-${datasetStamp()}.dump`)
  if (flags.fresh) rmSync(dump, { force: true })
  return preparePostgres(dump, async () => {
    const files = [...(await writeDataset(work, dataset))]
    const fixture = join(work, "fixture-completions.json")
    writeFileSync(fixture, JSON.stringify(completionFixture))
    return [...files, fixture]
  }, (args) => void run([binary, ...args]))
}

const main = async () => {
  console.log("building the binary (bun run build)")
  run(["bun", "run", "build"])
  mkdirSync(join(root, ".bench"), { recursive: true })
  const work = mkdtempSync(join(tmpdir(), "bench-completions-"))
  process.on("exit", () => rmSync(work, { recursive: true, force: true }))
  pg = await prepare(work)
  const rows: Array<Row> = []
  for (const processes of processCounts) {
    const sides = await startSides(pg, processes)
    try {
      const [project, baseline] = sides
      const first = project?.servers[0]
      const firstBaseline = baseline?.servers[0]
      if (first === undefined || firstBaseline === undefined) throw new Error("no servers")
      // The page tokens of the service's pages: both databases are copies of one, with one signing key.
      const tokens: Array<string> = []
      for (let n = 1; n <= SPREAD; n++) tokens.push(await respondentToken(first.url, n))
      const [token] = tokens
      if (token === undefined) throw new Error("no token")
      await checkParity(pg, first, firstBaseline, token)
      for (const surveys of spreads) {
        const name = `${surveys === 1 ? "one survey" : `${surveys} surveys in turn`}, ${processes} process${processes === 1 ? "" : "es"}`
        rows.push(await measure(pg, sides, script(work, tokens, surveys), name))
      }
    } finally {
      const running = [...children]
      stopAll()
      await Promise.all(running.map((child) => child.exited))
    }
  }

  const lines = [
    `Measured ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC on ${navigator.hardwareConcurrency} cores, Bun ${Bun.version}. ` +
    `Load: wrk, ${connections} connections over each server's processes, ${rounds} rounds of ${seconds} s per server after a ${warmUpSeconds} s warm-up, ` +
    `alternating project/baseline; medians. Both servers on one throwaway PostgreSQL cluster (127.0.0.1, \`fsync\` off), each ` +
    `on its own copy of the dataset (${dataset.surveys} surveys × ${fmt(dataset.responsesPerSurvey)} responses, and the ${SPREAD} ` +
    `completion surveys), pools of 10 connections per process. The project is this checkout's binary, with the change clock it ` +
    `has (src/Responses/ChangeClockRepo.ts); the baseline has the same clock (the survey's response_clock row locked from the stamp to COMMIT). Both count every completion ` +
    `against the respondent limits, lifted to 1,000,000 a minute. ` +
    `wrk and PostgreSQL share the machine's cores with the servers; ` +
    `load average ${loadAtStart} at the start, ${loadNow()} at the end.`,
    "",
    ...table(rows),
    "",
    "Ratios are baseline / project: req/s above 1 means the baseline answers more, CPU below 1 that it spends less. CPU µs/req is " +
    "the user + system CPU time (/proc) of the server's processes, and of the PostgreSQL backends serving its database, over a " +
    "round divided by the requests answered; statements per request are counted by `pg_stat_statements` over the warm-up and " +
    "the rounds, transaction control and the service's background work included (the requests still in flight when a round " +
    "ends ran but are not counted, so the figure is a little high; the baseline runs 5 per completion, and per batch of the " +
    "respondent limits' counts `BEGIN`, one lock of all its counters, one write and `COMMIT` as the service, one read more when " +
    "another process added to some of them)."
  ]
  console.log(`\n${lines.join("\n")}`)

  if (!flags["no-write"] && flags.only === undefined && flags.processes === undefined) {
    const doc = join(root, "docs", "performance.md")
    const begin = "<!-- bench:completions:begin -->"
    const end = "<!-- bench:completions:end -->"
    const current = readFileSync(doc, "utf8")
    const from = current.indexOf(begin)
    const to = current.indexOf(end)
    if (from < 0 || to < from) throw new Error(`${doc} has no ${begin} … ${end} markers`)
    writeFileSync(doc, `${current.slice(0, from)}${begin}\n${lines.join("\n")}\n${current.slice(to)}`)
    console.log(`\nwrote the table to ${doc}`)
  }
}

await main().finally(() => {
  stopAll()
  pg?.stop()
})
