/**
 * The operator's fault scenario: two `serve` processes (the compiled binary, built by `bun run
 * build` first: it starts in a quarter of the time of `bun src/main.ts`) on one database, a
 * workspace webhook to a local receiver (scripts/bench/webhook-receiver.ts), 8 respondent clients
 * (survey links and embed sessions; POSTs with an `Idempotency-Key`, PATCHes) and 4 API readers
 * spread over both processes, while one process is killed with SIGKILL and restarted, one is
 * stopped with SIGTERM and restarted, and (PostgreSQL) the database server itself is stopped for
 * 1.5 to 3 s and started again, each several times; then a drain for the webhook deliveries.
 *
 *   bun run bench:chaos [-- --database postgres|sqlite|both --seconds 120 --drain-seconds 90 --runs 1 --seed 1]
 *
 * PostgreSQL runs in a throwaway cluster (test/support/PostgresCluster.ts) with `synchronous_commit`
 * on; SQLite is one file in a temporary directory. It prints a table of checks and exits non-zero
 * when one fails; `--runs N` repeats the whole scenario and stops at the first failing run. All
 * traffic stays on 127.0.0.1; the processes, the cluster and the files go on every exit, Ctrl-C
 * included.
 */
import { Database } from "bun:sqlite"
import type { Subprocess } from "bun"
import { Option, Schema } from "effect"
import { writeFileSync } from "node:fs"
import { loadavg } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import * as Pg from "pg"
import { type PostgresCluster, startPostgres } from "../../test/support/PostgresCluster.js"
import { BENCH_PLAN } from "./Dataset.js"
import { freePort, sleep, spawnedProcesses } from "./Processes.js"
import { buildBinary, cleanup, databaseArgs, fmt, machine, random, root, runCli, summary, table, tempDir } from "./support.js"

const { values: args } = parseArgs({
  options: {
    database: { type: "string", default: "both" },
    seconds: { type: "string", default: "120" },
    "drain-seconds": { type: "string", default: "90" },
    runs: { type: "string", default: "1" },
    seed: { type: "string", default: "1" }
  }
})
const bounded = (text: string, min: number, max: number) => Math.min(max, Math.max(min, Math.floor(Number(text) || min)))
const loadSeconds = bounded(args.seconds, 20, 3600)
const drainSeconds = bounded(args["drain-seconds"], 1, 3600)
const runs = bounded(args.runs, 1, 100)
const seed = bounded(args.seed, 0, 2 ** 31)
if (!["postgres", "sqlite", "both"].includes(args.database)) {
  console.error("--database takes postgres, sqlite or both")
  process.exit(2)
}
const databases = args.database === "both" ? ["postgres", "sqlite"] as const : [args.database === "postgres" ? "postgres" : "sqlite"] as const

const RESPONDENTS = 8
const READERS = 4
/** How long one logical request is retried (503, no answer) before the client gives it up. */
const RETRY_MS = 30_000
const REQUEST_TIMEOUT_MS = 15_000
const START_TIMEOUT_MS = 90_000
const STOP_TIMEOUT_MS = 45_000
/**
 * Error lines one process may log during one database outage of at most 3 s: losing the database
 * and finding it again deserve a few lines, not one per retry.
 */
const OUTAGE_ERROR_LINES = 10

const EDITOR = "sk_chaos_editor_00000000000000000000"
const SURVEY = "srv_chaos"
const QUESTION = "q_chaos_text"
const fixture = {
  plans: [BENCH_PLAN],
  accounts: [{ id: "acc_chaos", planId: BENCH_PLAN.id }],
  workspaces: [{ id: "ws_chaos", ownerAccountId: "acc_chaos" }],
  members: [{ workspaceId: "ws_chaos", accountId: "acc_chaos", role: "owner" }],
  apiKeys: [{ token: EDITOR, workspaceId: "ws_chaos", createdBy: "acc_chaos", surveyIds: null, revoked: false }],
  surveys: [{
    id: SURVEY,
    workspaceId: "ws_chaos",
    title: "Chaos",
    status: "published",
    createdAt: "2026-01-01T00:00:00.000Z",
    updatedAt: "2026-01-01T00:00:00.000Z",
    questions: [{ id: QUESTION, type: "textarea", label: "Say", order: 1, required: true }]
  }]
}

const { children } = spawnedProcesses()
let cluster: PostgresCluster | undefined
let work: string | undefined
/** Whatever ends the run, the processes, the cluster and the files go with it. */
const tearDown = () => {
  for (const child of children) child.kill(9)
  children.clear()
  try {
    cluster?.stop()
  } catch (error) {
    console.error(`stopping the PostgreSQL cluster: ${String(error)}`)
  }
  cluster = undefined
  if (work !== undefined) cleanup(work)
  work = undefined
}
process.on("exit", tearDown)
process.once("SIGTERM", () => process.exit(143))
process.once("SIGHUP", () => process.exit(129))

const now = () => performance.now()

// ---------------------------------------------------------------------------------------------
// What every answer is checked for, whichever client got it.

class Tally {
  readonly statuses = new Map<string, number>()
  readonly problems = new Map<string, number>()
  readonly examples: Array<string> = []
  noAnswer = 0
  /** Logical requests that got no answer but 503 within `RETRY_MS`, retries included. */
  gaveUp = 0
  /** The slowest 503, in ms: while the database is gone, a request should be refused at once. */
  slowest503 = 0

  add(map: Map<string, number>, key: string) {
    map.set(key, (map.get(key) ?? 0) + 1)
  }
  problem(kind: string, detail: string) {
    this.add(this.problems, kind)
    if (this.examples.length < 8) this.examples.push(`${kind}: ${detail}`)
  }
}

const ErrorBody = Schema.Struct({ code: Schema.String, message: Schema.String })
const decodeJson = <A, I>(schema: Schema.Schema<A, I>) => Schema.decodeUnknownOption(Schema.parseJson(schema))

interface Answer {
  readonly status: number
  readonly text: string
}

/** One request to one process; the answer, checked, or undefined when none came. */
const send = async (tally: Tally, base: string, path: string, init: RequestInit = {}): Promise<Answer | undefined> => {
  const started = now()
  let res: Response
  let text: string
  try {
    res = await fetch(`${base}${path}`, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
    text = await res.text()
  } catch {
    tally.noAnswer += 1
    return undefined
  }
  const took = now() - started
  const type = res.headers.get("content-type") ?? "none"
  const method = init.method ?? "GET"
  const what = `${method} ${path.replace(/\/(embed|responses)\/[^/?]+/, "/$1/…")} answered ${res.status} ${type}`
  tally.add(tally.statuses, String(res.status))
  if (res.headers.get("x-request-id") === null) tally.problem(`${res.status} without x-request-id`, `${what}: ${text.slice(0, 60)}`)
  if (type.startsWith("text/plain")) tally.problem(`${res.status} plain-text body`, `${what}: ${text.slice(0, 60)}`)
  if (res.status >= 500 && res.status !== 503) tally.problem(`${res.status} (5xx other than 503)`, `${what}: ${text.slice(0, 120)}`)
  if (res.status === 503) {
    tally.slowest503 = Math.max(tally.slowest503, took)
    const body = decodeJson(ErrorBody)(text)
    if (Option.isNone(body) || body.value.code !== "service_unavailable") {
      tally.problem("503 without the documented body", `${what}: ${text.slice(0, 120)}`)
    }
  }
  return { status: res.status, text }
}

const jsonInit = (method: string, token: string, body: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method,
  headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
  body: JSON.stringify(body)
})

// ---------------------------------------------------------------------------------------------
// The two serve processes, each restartable on its port.

interface Slot {
  readonly name: string
  readonly port: number
  readonly base: string
  proc: Subprocess<"ignore", "pipe", "pipe"> | undefined
  /** Arrival times (performance.now) of the error lines it logged, all its lives together. */
  readonly errorLines: Array<number>
  lastStderr: string
  /** The last error line it logged, shortened: why a SIGTERM'd process exited non-zero. */
  lastError: string
  /** Starts that exited before serving (the database was down), each followed by another. */
  refusedStarts: number
}

const binary = buildBinary()

/** Reads `stream` to its end, a chunk at a time, so that the process never blocks on a full pipe. */
const eachChunk = async (stream: ReadableStream<Uint8Array>, onText: (text: string) => void) => {
  const decoder = new TextDecoder()
  const reader = stream.getReader()
  for (let read = await reader.read(); !read.done; read = await reader.read()) onText(decoder.decode(read.value, { stream: true }))
}

/** Reads a process's JSON log as it comes, keeping only the times of its error lines. */
const watchLog = (slot: Slot, stream: ReadableStream<Uint8Array>) => {
  let rest = ""
  return eachChunk(stream, (text) => {
    rest += text
    for (let end = rest.indexOf("\n"); end >= 0; end = rest.indexOf("\n")) {
      const line = rest.slice(0, end)
      rest = rest.slice(end + 1)
      if (/"logLevel":"(ERROR|FATAL)"/.test(line) && slot.errorLines.length < 1_000_000) {
        slot.errorLines.push(now())
        slot.lastError = line.slice(0, 400)
      }
    }
    if (rest.length > 1_000_000) rest = ""
  })
}

const keepTail = (slot: Slot, stream: ReadableStream<Uint8Array>) =>
  eachChunk(stream, (text) => {
    slot.lastStderr = (slot.lastStderr + text).slice(-2000)
  })

const spawnServe = (slot: Slot, database: string) => {
  const proc = Bun.spawn([binary, "serve", "--port", String(slot.port), ...databaseArgs(database)], {
    cwd: root,
    env: {
      ...process.env,
      LOG_FORMAT: "json",
      LOG_LEVEL: "warn",
      WORKER_LEASE_SECONDS: "5",
      // Every simulated respondent comes from 127.0.0.1 to one survey, far faster than real ones:
      // the respondent limits (tested in test/RespondentLimits.test.ts) are lifted out of the way.
      RESPONDENT_LIMIT_PER_ADDRESS: "1000000",
      RESPONDENT_LIMIT_PER_SURVEY: "1000000",
      WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
      PUBLIC_BASE_URL: slot.base
    },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe"
  })
  children.add(proc)
  slot.proc = proc
  void watchLog(slot, proc.stdout)
  void keepTail(slot, proc.stderr)
  return proc
}

/**
 * Starts the slot's process and waits until it serves. As a supervisor would, it starts it again
 * when it exits first: `serve` refuses to start while the database cannot be reached.
 */
const start = async (slot: Slot, database: string) => {
  const deadline = now() + START_TIMEOUT_MS
  for (let attempt = 0; attempt < 100 && now() < deadline; attempt++) {
    const proc = spawnServe(slot, database)
    while (now() < deadline && proc.exitCode === null) {
      const ok = await fetch(`${slot.base}/healthz`, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok, () => false)
      if (ok) return
      await sleep(100)
    }
    if (proc.exitCode === null) break
    children.delete(proc)
    slot.refusedStarts += 1
    await sleep(500)
  }
  throw new Error(`${slot.name} did not serve within ${START_TIMEOUT_MS / 1000} s: ${slot.lastStderr}`)
}

/** Stops a slot's process with `signal` and answers its exit code (SIGKILL after the bound). */
const stop = async (slot: Slot, signal: "SIGTERM" | "SIGKILL") => {
  const proc = slot.proc
  if (proc === undefined) return undefined
  proc.kill(signal)
  const code = await Promise.race([proc.exited, sleep(STOP_TIMEOUT_MS).then(() => undefined)])
  if (code === undefined) {
    proc.kill(9)
    await proc.exited
  }
  children.delete(proc)
  slot.proc = undefined
  return code
}

// ---------------------------------------------------------------------------------------------
// The respondents: what each was told, to compare with what the database holds.

interface Save {
  readonly value: string
  readonly completed: boolean
}
interface Visit {
  /** `c<client>-v<visit>`: the prefix of every value this visit saved, so its rows can be found. */
  readonly key: string
  responseId: string | undefined
  /** The last save acknowledged (201 or 200). */
  acked: Save | undefined
  /** Saves sent after it whose answer never came: the database may hold one of them instead. */
  readonly unanswered: Array<Save>
}

const Page = Schema.Struct({ respondentToken: Schema.String })
const Started = Schema.Struct({ responseId: Schema.String })
const EmbedCreated = Schema.Struct({ embedUrl: Schema.String })

interface World {
  readonly tally: Tally
  readonly slots: ReadonlyArray<Slot>
  readonly loadEnd: number
  readonly visits: Array<Visit>
  readonly embedPairs: { conclusive: number; inconclusive: number; failures: Array<string> }
  readonly runId: string
}

const pick = (world: World, rnd: () => number) => world.slots[Math.floor(rnd() * world.slots.length)] ?? world.slots[0]

/**
 * Sends one logical request until it gets an answer other than 503 (on either process, as a client
 * behind a load balancer would), within `RETRY_MS`. Answers that answer (undefined when none came)
 * and how many attempts got none: such an attempt may have been carried out all the same.
 */
const persist = async (world: World, rnd: () => number, path: string, init: () => RequestInit) => {
  const deadline = now() + RETRY_MS
  let unanswered = 0
  for (let attempt = 0; attempt < 300 && now() < deadline; attempt++) {
    const slot = pick(world, rnd)
    if (slot === undefined) break
    const answer = await send(world.tally, slot.base, path, init())
    if (answer !== undefined && answer.status !== 503) return { answer, unanswered }
    if (answer === undefined) unanswered += 1
    await sleep(50 + rnd() * 100)
  }
  world.tally.gaveUp += 1
  return { answer: undefined, unanswered }
}

const unexpected = (world: World, what: string, answer: Answer | undefined) => {
  if (answer !== undefined) world.tally.problem(`unexpected ${answer.status}`, `${what}: ${answer.text.slice(0, 120)}`)
}

/** A respondent token: from `/s/{id}`, or from a fresh embed session's one-time URL. */
const respondentToken = async (world: World, rnd: () => number, embed: boolean, externalUserId: string) => {
  let path = `/s/${SURVEY}`
  if (embed) {
    const { answer: created } = await persist(world, rnd, `/api/v1/surveys/${SURVEY}/embed-sessions`, () =>
      jsonInit("POST", EDITOR, { externalUserId }))
    const url = created?.status === 201 ? decodeJson(EmbedCreated)(created.text) : Option.none()
    if (Option.isNone(url)) return unexpected(world, "embed session", created)
    path = new URL(url.value.embedUrl).pathname
  }
  const { answer: page, unanswered } = await persist(world, rnd, path, () => ({ headers: { accept: "application/json" } }))
  const token = page?.status === 200 ? decodeJson(Page)(page.text) : Option.none()
  // A 410 after an unanswered load: that load may have spent the URL. Not an error, a lost visit.
  if (Option.isNone(token)) return page?.status === 410 && unanswered > 0 ? undefined : unexpected(world, path, page)
  return token.value.respondentToken
}

const respondent = async (world: World, client: number) => {
  const rnd = random(seed * 1000 + client)
  for (let n = 0; n < 1_000_000 && now() < world.loadEnd; n++) {
    const key = `c${client}-v${n}`
    const embed = rnd() < 0.4
    const token = await respondentToken(world, rnd, embed, `chaos-${key}`)
    if (token === undefined) continue
    const visit: Visit = { key, responseId: undefined, acked: undefined, unanswered: [] }
    world.visits.push(visit)
    const saves = 1 + Math.floor(rnd() * 3)
    const finishing = rnd() < 0.8
    for (let s = 0; s < saves; s++) {
      const save: Save = { value: `${key}-s${s}`, completed: finishing && s === saves - 1 }
      const body = { answers: [{ questionId: QUESTION, values: [save.value] }], finished: save.completed }
      const first = s === 0
      const path = first ? "/respond/v1/responses" : `/respond/v1/responses/${visit.responseId}`
      const { answer, unanswered } = await persist(world, rnd, path, () =>
        jsonInit(first ? "POST" : "PATCH", token, body, first ? { "idempotency-key": `${world.runId}-${key}` } : {}))
      const ok = answer?.status === (first ? 201 : 200)
      const started = ok && first ? decodeJson(Started)(answer.text) : Option.none()
      if (Option.isSome(started)) visit.responseId = started.value.responseId
      if (ok && (!first || visit.responseId !== undefined)) {
        visit.acked = save
        visit.unanswered.length = 0
        await sleep(20 + rnd() * 60)
        continue
      }
      visit.unanswered.push(save)
      // A completing PATCH refused after an attempt of it went unanswered: that attempt completed it.
      if (!(answer?.status === 400 && save.completed && !first && unanswered > 0)) unexpected(world, path, answer)
      break
    }
  }
}

const reader = async (world: World, client: number) => {
  const rnd = random(seed * 1000 + 500 + client)
  const paths = [
    "/api/v1/surveys",
    `/api/v1/surveys/${SURVEY}`,
    `/api/v1/surveys/${SURVEY}/responses?limit=25`,
    `/api/v1/surveys/${SURVEY}/analytics`,
    "/api/v1/usage",
    "/api/v1/webhooks"
  ]
  for (let n = 0; n < 10_000_000 && now() < world.loadEnd; n++) {
    const slot = pick(world, rnd)
    const path = paths[n % paths.length] ?? "/api/v1/surveys"
    if (slot === undefined) return
    const answer = await send(world.tally, slot.base, path, { headers: { authorization: `Bearer ${EDITOR}` } })
    if (answer !== undefined && answer.status !== 200 && answer.status !== 503) unexpected(world, path, answer)
    await sleep(20 + rnd() * 40)
  }
}

/** Every so often an embed URL opened on both processes at once: it must load once. */
const embedPairs = async (world: World) => {
  const rnd = random(seed * 1000 + 900)
  for (let n = 0; n < 100_000 && now() < world.loadEnd; n++) {
    await sleep(1000 + rnd() * 1000)
    const { answer: created } = await persist(world, rnd, `/api/v1/surveys/${SURVEY}/embed-sessions`, () =>
      jsonInit("POST", EDITOR, { externalUserId: `chaos-pair-${n}` }))
    const url = created?.status === 201 ? decodeJson(EmbedCreated)(created.text) : Option.none()
    if (Option.isNone(url)) {
      unexpected(world, "embed session", created)
      continue
    }
    const path = new URL(url.value.embedUrl).pathname
    const answers = await Promise.all(
      world.slots.map((slot) => send(world.tally, slot.base, path, { headers: { accept: "application/json" } }))
    )
    const statuses = answers.map((a) => a?.status)
    const loaded = statuses.filter((s) => s === 200).length
    const conclusive = statuses.every((s) => s === 200 || s === 410)
    if (conclusive) world.embedPairs.conclusive += 1
    else world.embedPairs.inconclusive += 1
    if (loaded > 1 || (conclusive && loaded !== 1)) world.embedPairs.failures.push(`pair ${n}: ${statuses.join(", ")}`)
  }
}

// ---------------------------------------------------------------------------------------------
// The faults.

interface Outage {
  readonly from: number
  readonly to: number
  readonly downMs: number
}
interface Faults {
  readonly log: Array<string>
  readonly sigtermExits: Array<{ readonly slot: string; readonly code: number | undefined }>
  readonly outages: Array<Outage>
  kills: number
}

/** Seconds since the load began, for the fault log. */
const since = (world: World) => `${(loadSeconds - (world.loadEnd - now()) / 1000).toFixed(1)} s`

/** SIGKILL and SIGTERM in turn, each followed by a restart on the same port, a few seconds apart. */
const processFaults = async (world: World, database: string, record: Faults) => {
  const rnd = random(seed * 1000 + 700)
  await sleep(4000)
  for (let n = 0; n < 1000 && now() < world.loadEnd - 6000; n++) {
    const slot = world.slots[Math.floor(rnd() * world.slots.length)]
    if (slot === undefined) return
    if (n % 2 === 0) {
      await stop(slot, "SIGKILL")
      record.kills += 1
      record.log.push(`${since(world)} SIGKILL ${slot.name}`)
    } else {
      // A load balancer's health check keeps asking the stopping process until its port closes.
      const proc = slot.proc
      const stopped = stop(slot, "SIGTERM")
      for (let i = 0; i < 5000 && proc?.exitCode === null; i++) {
        if ((await send(world.tally, slot.base, "/healthz")) === undefined) break
        await sleep(5)
      }
      const code = await stopped
      record.sigtermExits.push({ slot: slot.name, code })
      record.log.push(`${since(world)} SIGTERM ${slot.name}: exit ${code ?? "none (killed)"}`)
      if (code !== 0) record.log.push(`    last error line: ${slot.lastError}; stderr: ${slot.lastStderr.slice(-400)}`)
    }
    await start(slot, database)
    record.log.push(`${since(world)} ${slot.name} serves again`)
    await sleep(2000 + rnd() * 2000)
  }
}

/** PostgreSQL stopped for 1.5 to 3 s and started again, every 6 to 10 s, whatever the processes do meanwhile. */
const databaseOutages = async (world: World, postgres: PostgresCluster, record: Faults) => {
  const rnd = random(seed * 1000 + 800)
  await sleep(8000)
  for (let n = 0; n < 1000 && now() < world.loadEnd - 5000; n++) {
    const from = now()
    const downMs = 1500 + Math.floor(rnd() * 1500)
    await postgres.halt()
    await sleep(downMs)
    await postgres.resume()
    record.outages.push({ from, to: now(), downMs })
    record.log.push(`${since(world)} PostgreSQL back after ${downMs} ms down (${((now() - from) / 1000).toFixed(1)} s from stop to started)`)
    await sleep(6000 + rnd() * 4000)
  }
}

// ---------------------------------------------------------------------------------------------
// What the database holds, read directly once the load is over.

const Row = Schema.Struct({ id: Schema.String, completed: Schema.Number, value: Schema.NullOr(Schema.String) })
const rowsQuery = `SELECT r.id AS id, CAST(r.completed AS INTEGER) AS completed, a.value AS value FROM responses r
  LEFT JOIN answers a ON a.response_id = r.id AND a.question_id = '${QUESTION}' WHERE r.survey_id = '${SURVEY}'`

const storedRows = async (database: string) => {
  if (database.startsWith("postgres")) {
    const client = new Pg.Client({ connectionString: database })
    await client.connect()
    try {
      return Schema.decodeUnknownSync(Schema.Array(Row))((await client.query(rowsQuery)).rows)
    } finally {
      await client.end()
    }
  }
  const db = new Database(database, { readonly: true })
  try {
    return Schema.decodeUnknownSync(Schema.Array(Row))(db.query(rowsQuery).all())
  } finally {
    db.close()
  }
}

const receiverProcess = async () => {
  const proc = Bun.spawn(["bun", join(import.meta.dirname, "webhook-receiver.ts")], { stdout: "pipe", stderr: "inherit" })
  children.add(proc)
  const reader = proc.stdout.getReader()
  const first = await Promise.race([reader.read(), sleep(30_000).then(() => undefined)])
  reader.releaseLock()
  const port = Number(new TextDecoder().decode(first?.value).trim())
  if (!Number.isInteger(port) || port <= 0) throw new Error("the webhook receiver did not start")
  return `http://127.0.0.1:${port}`
}

// ---------------------------------------------------------------------------------------------
// One run on one database.

interface Check {
  readonly name: string
  readonly result: string
  /** Undefined for a figure that is reported, not judged. */
  readonly ok: boolean | undefined
}

const scenario = async (kind: "postgres" | "sqlite", run: number): Promise<ReadonlyArray<Check>> => {
  work = tempDir()
  let database = join(work, "chaos.db")
  if (kind === "postgres") {
    cluster = await startPostgres({ synchronousCommit: true })
    database = `${cluster.base}/postgres`
  }
  const fixtureFile = join(work, "fixture.json")
  writeFileSync(fixtureFile, JSON.stringify(fixture))
  runCli(["import", fixtureFile, ...databaseArgs(database)])
  const receiver = await receiverProcess()
  const slots: Array<Slot> = ["A", "B"].map((name) => {
    const port = freePort()
    return { name, port, base: `http://127.0.0.1:${port}`, proc: undefined, errorLines: [], lastStderr: "", lastError: "", refusedStarts: 0 }
  })
  for (const slot of slots) await start(slot, database)

  const tally = new Tally()
  const world: World = {
    tally,
    slots,
    loadEnd: now() + loadSeconds * 1000,
    visits: [],
    embedPairs: { conclusive: 0, inconclusive: 0, failures: [] },
    runId: `run${run}-${Date.now()}`
  }
  const registered = await send(tally, slots[0]?.base ?? "", "/api/v1/webhooks",
    jsonInit("PUT", EDITOR, { targetUrl: `${receiver}/hook` }))
  if (registered?.status !== 200) throw new Error(`registering the webhook answered ${registered?.status}: ${registered?.text}`)

  const loadAtStart = loadavg()[0] ?? 0
  const record: Faults = { log: [], sigtermExits: [], outages: [], kills: 0 }
  console.error(`${kind}, run ${run}: ${loadSeconds} s of load with faults (load average ${loadAtStart.toFixed(1)})`)
  await Promise.all([
    ...Array.from({ length: RESPONDENTS }, (_, i) => respondent(world, i)),
    ...Array.from({ length: READERS }, (_, i) => reader(world, i)),
    embedPairs(world),
    processFaults(world, database, record),
    cluster === undefined ? Promise.resolve() : databaseOutages(world, cluster, record)
  ])
  const loadAtEnd = loadavg()[0] ?? 0
  for (const line of record.log) console.error(`  ${line}`)

  // The drain: every completed response's event at the receiver, within the bound.
  const drainStart = now()
  const rows = await storedRows(database)
  const completed = new Set(rows.filter((r) => r.completed !== 0).map((r) => r.id))
  const Count = Schema.NumberFromString
  let received = 0
  const drainEnd = drainStart + drainSeconds * 1000
  for (let i = 0; i < drainSeconds * 10 && received < completed.size && now() < drainEnd; i++) {
    const text = await fetch(`${receiver}/completed/count`).then((r) => r.text(), () => "0")
    received = Option.getOrElse(Schema.decodeUnknownOption(Count)(text), () => 0)
    if (received < completed.size) await sleep(100)
  }
  const drained = (now() - drainStart) / 1000
  const ids = decodeJson(Schema.Array(Schema.String))(await fetch(`${receiver}/completed`).then((r) => r.text()))
  const arrived = new Set(Option.getOrElse(ids, () => []))
  const late = [...completed].filter((id) => !arrived.has(id)).length
  const Stats = Schema.Struct({ latencies: Schema.Array(Schema.Number) })
  const stats = decodeJson(Stats)(await fetch(`${receiver}/stats`).then((r) => r.text()))
  const lag = summary(Option.match(stats, { onNone: () => [], onSome: (s) => s.latencies }))

  const exits = await Promise.all(slots.map(async (slot) => ({ slot: slot.name, code: await stop(slot, "SIGTERM") })))
  record.sigtermExits.push(...exits)

  // Each visit's response: once in the database, holding its last acknowledged save (or a later
  // one whose answer never came).
  const byVisit = new Map<string, Array<(typeof rows)[number]>>()
  for (const row of rows) {
    const key = /^(c\d+-v\d+)-s\d+$/.exec(row.value ?? "")?.[1] ?? "(none)"
    byVisit.set(key, [...(byVisit.get(key) ?? []), row])
  }
  let acknowledged = 0
  const wrong: Array<string> = []
  for (const visit of world.visits) {
    const found = byVisit.get(visit.key) ?? []
    if (found.length > 1) wrong.push(`${visit.key}: ${found.length} responses`)
    if (visit.acked === undefined) continue
    acknowledged += 1
    const row = found[0]
    const allowed = [visit.acked, ...visit.unanswered]
    if (row === undefined) wrong.push(`${visit.key}: ${visit.responseId} missing`)
    else if (row.id !== visit.responseId) wrong.push(`${visit.key}: ${visit.responseId} stored as ${row.id}`)
    else if (!allowed.some((s) => s.value === row.value && s.completed === (row.completed !== 0))) {
      wrong.push(`${visit.key}: holds ${row.value} completed=${row.completed}, acknowledged ${visit.acked.value}`)
    }
  }
  const stray = byVisit.get("(none)")?.length ?? 0
  if (stray > 0) wrong.push(`${stray} responses of no visit`)

  const count = (match: (kind: string) => boolean) =>
    [...tally.problems].filter(([k]) => match(k)).reduce((sum, [, n]) => sum + n, 0)
  const byKind = (match: (kind: string) => boolean) =>
    [...tally.problems].filter(([k]) => match(k)).map(([k, n]) => `${n} × ${k}`).join(", ")
  const perOutage = record.outages.map((o) =>
    Math.max(...slots.map((s) => s.errorLines.filter((t) => t >= o.from && t <= o.to + 1000).length)))
  const badExits = record.sigtermExits.filter((e) => e.code !== 0)
  const statuses = [...tally.statuses].sort().map(([s, n]) => `${s}: ${n}`).join(", ")
  const pairs = world.embedPairs

  console.log(
    `\n${kind}, run ${run} of ${runs}: ${loadSeconds} s of load, drain bound ${drainSeconds} s, seed ${seed}; ` +
      `database outages of ${record.outages.map((o) => o.downMs).join(", ") || "none"} ms; load average ${loadAtStart.toFixed(1)} at the start, ` +
      `${loadAtEnd.toFixed(1)} at the end; ${machine()}; ${new Date().toISOString().slice(0, 16)}Z`
  )
  console.log(`answers: ${statuses}; ${tally.noAnswer} requests got no answer (process down); ${
      slots.reduce((sum, s) => sum + s.refusedStarts, 0)
    } starts exited before serving and were started again; ${tally.gaveUp} given up after ${RETRY_MS / 1000} s of retries; slowest 503 ${tally.slowest503.toFixed(0)} ms`)
  for (const example of [...tally.examples, ...wrong.slice(0, 5), ...pairs.failures.slice(0, 3)]) console.log(`  ${example}`)
  const midRunTerms = record.sigtermExits.length - exits.length
  const checks: Array<Check> = [
    {
      name: "faults carried out during the load (each at least twice)",
      result: `${record.kills} SIGKILLs, ${midRunTerms} SIGTERMs` + (kind === "postgres" ? `, ${record.outages.length} database outages` : ""),
      ok: record.kills >= 2 && midRunTerms >= 2 && (kind === "sqlite" || record.outages.length >= 2)
    },
    {
      name: "acknowledged responses stored once, with their last acknowledged answers",
      result: `${acknowledged} acknowledged of ${world.visits.length} visits; ${rows.length} stored; ${wrong.length} wrong`,
      ok: wrong.length === 0 && acknowledged > 0
    },
    {
      name: "response.completed of every completed response at the receiver within the drain",
      result: late === 0
        ? `${completed.size} of ${completed.size} in ${drained.toFixed(1)} s`
        : `${late} of ${completed.size} not there after ${drained.toFixed(1)} s`,
      ok: late === 0
    },
    {
      name: "delivery lag, event to receipt, during load and drain (p50 / p99 / max)",
      result: `${fmt(lag.p50 / 1000)} / ${fmt(lag.p99 / 1000)} / ${fmt(lag.max / 1000)} s`,
      ok: undefined
    },
    { name: "no 5xx but 503", result: byKind((k) => k.includes("5xx")) || "none", ok: count((k) => k.includes("5xx")) === 0 },
    {
      name: "every 503 with the documented body and x-request-id",
      result: `${tally.statuses.get("503") ?? 0} × 503; ${byKind((k) => k.startsWith("503")) || "all documented"}`,
      ok: count((k) => k.startsWith("503")) === 0
    },
    {
      name: "every answer with x-request-id, none in plain text",
      result: byKind((k) => k.includes("x-request-id") || k.includes("plain-text")) || "all",
      ok: count((k) => k.includes("x-request-id") || k.includes("plain-text")) === 0
    },
    {
      name: "no unexpected answer to a valid request",
      result: byKind((k) => k.startsWith("unexpected")) || "none",
      ok: count((k) => k.startsWith("unexpected")) === 0
    },
    {
      name: "SIGTERM'd processes exit 0",
      result: `${record.sigtermExits.length - badExits.length} of ${record.sigtermExits.length}` +
        (badExits.length > 0 ? ` (${badExits.map((e) => `${e.slot}: ${e.code ?? "killed"}`).join(", ")})` : ""),
      ok: badExits.length === 0
    },
    {
      name: `error lines per process per database outage (at most ${OUTAGE_ERROR_LINES})`,
      result: perOutage.length === 0
        ? `no outages; ${slots.map((s) => `${s.name} ${s.errorLines.length}`).join(", ")} error lines in all`
        : `max ${Math.max(...perOutage)}; per outage ${perOutage.join(", ")}`,
      ok: perOutage.every((n) => n <= OUTAGE_ERROR_LINES)
    },
    {
      name: "an embed URL opened on both processes at once loads once",
      result: `${pairs.conclusive} pairs both answered, ${pairs.failures.length} loaded ≠ 1; ${pairs.inconclusive} with a process down or 503`,
      ok: pairs.failures.length === 0 && pairs.conclusive > 0
    }
  ]
  console.log(table(["check", "result", ""], checks.map((c) => [c.name, c.result, c.ok === undefined ? "" : c.ok ? "ok" : "FAILED"])))
  tearDown()
  return checks
}

let failed = false
for (let run = 1; run <= runs && !failed; run++) {
  for (const kind of databases) {
    const checks = await scenario(kind, run)
    if (checks.some((c) => c.ok === false)) failed = true
  }
}
process.exit(failed ? 1 : 0)
