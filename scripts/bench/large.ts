/**
 * A large survey under the operations that go through its history: one survey of 1,000,000
 * responses on SQLite (200,000 on PostgreSQL) beside four ordinary ones, respondents completing
 * responses at a steady rate across all five the whole time, while one after another: a label
 * edit, an option added to a choice question, a question added (each a `PUT …/questions`), an
 * erasure of an `externalUserId` that 10,000 of the large survey's responses carry, a 30-day
 * webhook recovery, and the operator's `analytics rebuild`. Per operation: its own time, the
 * saves' p50/p99/max latency and count of 503 from its start until the analytics of the large
 * survey are exact again, and that time. The first row is a quiet window of saves alone, the
 * baseline the others compare with.
 *
 *   bun run bench:large [-- --database sqlite|postgres --responses N --rate 40]
 *
 * SQLite runs one `serve` process, PostgreSQL two (saves alternate between them, operations go to
 * the first), in a throwaway cluster that the run starts (test/support/PostgresCluster.ts) and
 * stops. The large SQLite file is seeded once through SQL directly and kept under .bench/ (each
 * run works on a copy); PostgreSQL is seeded at each run. Everything listens on 127.0.0.1.
 *
 * "Exact again": the analytics of the large survey show the edit (the new option, the new
 * question), say nothing of being rebuilt, and count at least the responses that the survey
 * counted just before they were read.
 */
import { Database } from "bun:sqlite"
import { copyFileSync, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { loadavg } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import * as Pg from "pg"
import { answersJson } from "../../src/Responses/AnswerWire.js"
import { startPostgres, type PostgresCluster } from "../../test/support/PostgresCluster.js"
import { BENCH_PLAN } from "./Dataset.js"
import { freePort } from "./Processes.js"
import {
  buildBinary,
  cleanup,
  databaseArgs,
  fmt,
  machine,
  random,
  root,
  type Server,
  startServer,
  summary,
  table,
  tempDir
} from "./support.js"

const { values: args } = parseArgs({
  options: {
    database: { type: "string", default: "sqlite,postgres" },
    responses: { type: "string" },
    rate: { type: "string", default: "40" },
    quiet: { type: "string", default: "5" },
    settle: { type: "string", default: "900" }
  }
})
const databases = new Set(args.database.split(","))
const rate = Math.min(500, Math.max(1, Number(args.rate)))
const quietSeconds = Math.min(60, Math.max(1, Number(args.quiet)))
/** The longest wait for analytics to be exact again after an operation. */
const settleMillis = Math.min(3600, Math.max(10, Number(args.settle))) * 1000
const responsesFor = (database: "sqlite" | "postgres") =>
  Math.min(2_000_000, Math.max(1000, Number(args.responses ?? (database === "sqlite" ? 1_000_000 : 200_000))))

const TOKEN = "sk_bench_large_editor_00000000000000"
const WORKSPACE = "ws_bench"
const LARGE = "srv_large"
const SMALL = ["srv_small_1", "srv_small_2", "srv_small_3", "srv_small_4"]
const SURVEYS = [LARGE, ...SMALL]
const ERASED = "person-erased"
/** Responses of the large survey that carry ERASED: 10,000, or a tenth of a smaller survey. */
const erasedCount = (responses: number) => Math.min(10_000, Math.floor(responses / 10))
/** Events of the last 30 days that the recovery queues again: the large survey's latest responses'. */
const eventCount = (responses: number) => Math.min(responses, 50_000)

interface Question {
  readonly id: string
  readonly type: "textarea" | "checkbox" | "number" | "scale"
  readonly label: string
  readonly options?: ReadonlyArray<string>
}
const questionsOf = (survey: string): Array<Question> => [
  { id: `${survey}_text`, type: "textarea", label: "Anything to add?" },
  { id: `${survey}_pick`, type: "checkbox", label: "Which ones?", options: ["a", "b", "c"] },
  { id: `${survey}_num`, type: "number", label: "How many?" },
  { id: `${survey}_scale`, type: "scale", label: "How likely?", options: ["1", "2", "3", "4", "5"] }
]
const wireQuestion = (q: Question) => ({
  id: q.id,
  type: q.type,
  label: q.label,
  ...(q.options === undefined ? {} : { options: q.options.map((value) => ({ value, label: value })) }),
  ...(q.type === "checkbox" ? { allowMultiple: true } : {})
})

const fixture = {
  plans: [BENCH_PLAN],
  accounts: [{ id: "acc_bench", planId: BENCH_PLAN.id }],
  workspaces: [{ id: WORKSPACE, ownerAccountId: "acc_bench" }],
  members: [{ workspaceId: WORKSPACE, accountId: "acc_bench", role: "owner" }],
  apiKeys: [{ token: TOKEN, workspaceId: WORKSPACE, createdBy: "acc_bench", surveyIds: null, revoked: false }],
  surveys: SURVEYS.map((id) => ({
    id,
    workspaceId: WORKSPACE,
    title: id,
    status: "published",
    createdAt: "2026-01-01T00:00:00.000Z",
    updatedAt: "2026-01-01T00:00:00.000Z",
    questions: questionsOf(id).map((q, i) => ({
      id: q.id,
      type: q.type,
      label: q.label,
      order: i + 1,
      allowMultiple: q.type === "checkbox",
      options: (q.options ?? []).map((o) => ({ value: o, label: o }))
    }))
  }))
}

const binary = buildBinary()
const cli = (cliArgs: ReadonlyArray<string>) => {
  const result = Bun.spawnSync([binary, ...cliArgs], {
    cwd: root,
    env: { ...process.env, LOG_FORMAT: "json", LOG_LEVEL: "warn" },
    stdout: "pipe",
    stderr: "pipe"
  })
  if (result.exitCode !== 0) throw new Error(`survey-service ${cliArgs.join(" ")} failed: ${result.stderr.toString()}`)
}

const iso = (ms: number) => new Date(ms).toISOString()
const SEED_START = Date.UTC(2025, 0, 1)

/** One seeded response of the large survey: its row and its answers. */
const seededResponse = (i: number, responses: number, rnd: () => number) => {
  const questions = questionsOf(LARGE)
  const id = `rsp_large_${String(i).padStart(8, "0")}`
  const erasedEvery = Math.floor(responses / erasedCount(responses))
  const externalUserId = i % erasedEvery === 0 && i / erasedEvery < erasedCount(responses)
    ? ERASED
    : i % 5 === 0
    ? `person-${i}`
    : null
  const completed = rnd() < 0.85
  const created = SEED_START + i * 20_000
  const answers: Array<{ questionId: string; value: string; values: Array<string>; type: string; position: number }> = []
  questions.forEach((q, k) => {
    if (!completed && rnd() < 0.5) return
    const values = q.type === "textarea"
      ? [`comment ${i}`]
      : q.type === "checkbox"
      ? (q.options ?? []).filter(() => rnd() < 0.4)
      : q.type === "number"
      ? [String(Math.floor(rnd() * 100))]
      : [String(1 + Math.floor(rnd() * 5))]
    if (values.length === 0) return
    const value = q.type === "checkbox" && values.length > 1 ? JSON.stringify(values) : values[0] ?? ""
    answers.push({ questionId: q.id, value, values, type: q.type, position: k + 1 })
  })
  return {
    row: {
      id,
      externalUserId,
      completed: completed ? 1 : 0,
      completedAt: completed ? iso(created + 60_000) : null,
      createdAt: iso(created),
      json: answersJson(answers, (a) => a.values)
    },
    answers
  }
}

/** The SQLite file of `responses`: from .bench/ when seeded before, else seeded there first. */
const sqliteDataset = (responses: number) => {
  const dir = join(root, ".bench")
  mkdirSync(dir, { recursive: true })
  const file = join(dir, `large-sqlite-${responses}.db`)
  if (existsSync(file)) {
    cli(["migrate", "--db", file])
    return file
  }
  const part = `${file}.part`
  rmSync(part, { force: true })
  const fixtureFile = join(dir, "large-fixture.json")
  writeFileSync(fixtureFile, JSON.stringify(fixture))
  cli(["import", fixtureFile, "--db", part])
  console.error(`seeding ${responses} responses into ${file} …`)
  const db = new Database(part)
  db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF")
  const insertResponse = db.prepare(
    `INSERT INTO responses (id, survey_id, external_user_id, completed, completed_at, created_at, updated_at, answers_json, answers_layout)
     VALUES (?, '${LARGE}', ?, ?, ?, ?, ?, ?, (SELECT answer_layout FROM surveys WHERE id = '${LARGE}'))`
  )
  const insertAnswer = db.prepare(`INSERT INTO answers (response_id, question_id, value, "values") VALUES (?, ?, ?, ?)`)
  const rnd = random(7)
  for (let from = 0; from < responses; from += 50_000) {
    db.transaction(() => {
      for (let i = from; i < Math.min(responses, from + 50_000); i++) {
        const { answers, row } = seededResponse(i, responses, rnd)
        insertResponse.run(row.id, row.externalUserId, row.completed, row.completedAt, row.createdAt, row.completedAt ?? row.createdAt, row.json)
        for (const a of answers) insertAnswer.run(row.id, a.questionId, a.value, JSON.stringify(a.values))
      }
    })()
  }
  db.exec(`UPDATE surveys SET response_count = ${responses} WHERE id = '${LARGE}'`)
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)")
  db.close()
  console.error("rebuilding its analytics …")
  cli(["analytics", "rebuild", "--db", part])
  renameSync(part, file)
  return file
}

/** Seeds the large survey into the PostgreSQL database at `url` (migrated and imported first). */
const seedPostgres = async (url: string, responses: number) => {
  const fixtureFile = join(work, "large-fixture.json")
  writeFileSync(fixtureFile, JSON.stringify(fixture))
  cli(["import", fixtureFile, "--database-url", url])
  console.error(`seeding ${responses} responses into PostgreSQL …`)
  const client = new Pg.Client({ connectionString: url })
  await client.connect()
  try {
    const rnd = random(7)
    for (let from = 0; from < responses; from += 5000) {
      const rows: Array<ReturnType<typeof seededResponse>["row"]> = []
      const answers: Array<{ responseId: string; questionId: string; value: string; values: string }> = []
      for (let i = from; i < Math.min(responses, from + 5000); i++) {
        const seeded = seededResponse(i, responses, rnd)
        rows.push(seeded.row)
        for (const a of seeded.answers) answers.push({ responseId: seeded.row.id, questionId: a.questionId, value: a.value, values: JSON.stringify(a.values) })
      }
      await client.query("BEGIN")
      await client.query(
        `INSERT INTO responses (id, survey_id, external_user_id, completed, completed_at, created_at, updated_at, answers_json, answers_layout)
         SELECT r.id, $7, r.ext, r.completed, r.completed_at, r.created_at, COALESCE(r.completed_at, r.created_at), r.json,
                (SELECT answer_layout FROM surveys WHERE id = $7)
         FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::text[], $6::text[])
           AS r(id, ext, completed, completed_at, created_at, json)`,
        [
          rows.map((r) => r.id),
          rows.map((r) => r.externalUserId),
          rows.map((r) => r.completed),
          rows.map((r) => r.completedAt),
          rows.map((r) => r.createdAt),
          rows.map((r) => r.json),
          LARGE
        ]
      )
      await client.query(
        `INSERT INTO answers (response_id, question_id, value, "values")
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])`,
        [answers.map((a) => a.responseId), answers.map((a) => a.questionId), answers.map((a) => a.value), answers.map((a) => a.values)]
      )
      await client.query("COMMIT")
    }
    await client.query(`UPDATE surveys SET response_count = $1 WHERE id = $2`, [responses, LARGE])
    await client.query("VACUUM ANALYZE")
  } finally {
    await client.end()
  }
  console.error("rebuilding its analytics …")
  cli(["analytics", "rebuild", "--database-url", url])
}

/**
 * The events of the large survey's latest responses, dated over the last 29 days and already
 * past the webhook fan-out (as if sent before the webhook existed): what a 30-day recovery queues.
 */
const seedEvents = async (run: (text: string, params: ReadonlyArray<unknown>) => Promise<void>, responses: number) => {
  const count = eventCount(responses)
  const now = Date.now()
  const span = 29 * 86_400_000
  for (let from = 0; from < count; from += 5000) {
    const ids: Array<string> = []
    const payloads: Array<string> = []
    const times: Array<string> = []
    const responseIds: Array<string> = []
    for (let k = from; k < Math.min(count, from + 5000); k++) {
      const responseId = `rsp_large_${String(responses - count + k).padStart(8, "0")}`
      const at = iso(now - span + Math.floor((k * span) / count))
      const id = `evt_large_${String(k).padStart(8, "0")}`
      ids.push(id)
      times.push(at)
      responseIds.push(responseId)
      payloads.push(JSON.stringify({
        id,
        type: "response.completed",
        timestamp: at,
        formId: LARGE,
        data: { responseId, externalUserId: null, response: { id: responseId, surveyId: LARGE } }
      }))
    }
    await run("events", [ids, payloads, times, responseIds])
  }
}

/** A response's save: when it started (ms since the run's start), how long it took, its status. */
interface Save {
  readonly at: number
  readonly ms: number
  readonly status: number
}

const t0 = performance.now()
const clock = () => performance.now() - t0

/** Respondents completing responses at `rate` per second across the surveys, spread over `servers`. */
const startTraffic = async (servers: ReadonlyArray<Server>) => {
  const tokens = new Map<string, string>()
  for (const [s, server] of servers.entries()) {
    for (const survey of SURVEYS) {
      const page = await fetch(`${server.url}/s/${survey}`, { headers: { accept: "application/json" } })
      const body: unknown = await page.json()
      const token = typeof body === "object" && body !== null && "respondentToken" in body && typeof body.respondentToken === "string"
        ? body.respondentToken
        : ""
      if (token === "") throw new Error(`no respondent token for ${survey}: ${JSON.stringify(body)}`)
      tokens.set(`${s}:${survey}`, token)
    }
  }
  const saves: Array<Save> = []
  let running = true
  let inFlight = 0
  let n = 0
  const interval = 1000 / rate
  const rnd = random(11)
  const loop = (async () => {
    const started = clock()
    // Bounded: at most `rate` saves a second for at most four hours.
    for (let i = 0; running && i < rate * 4 * 3600; i++) {
      const due = started + i * interval
      const wait = due - clock()
      if (wait > 0) await Bun.sleep(wait)
      if (inFlight >= 400) continue
      const serverIndex = n % servers.length
      const survey = SURVEYS[Math.floor(n / servers.length) % SURVEYS.length] ?? LARGE
      n++
      const server = servers[serverIndex]
      const token = tokens.get(`${serverIndex}:${survey}`)
      if (server === undefined || token === undefined) continue
      const answers = [
        { questionId: `${survey}_text`, values: [`live ${n}`] },
        { questionId: `${survey}_pick`, values: [rnd() < 0.5 ? "a" : "b"] },
        { questionId: `${survey}_num`, values: [String(Math.floor(rnd() * 100))] }
      ]
      const at = clock()
      inFlight++
      void fetch(`${server.url}/respond/v1/responses`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ answers, finished: true }),
        signal: AbortSignal.timeout(30_000)
      }).then(
        async (res) => {
          await res.arrayBuffer()
          saves.push({ at, ms: clock() - at, status: res.status })
        },
        () => saves.push({ at, ms: clock() - at, status: 0 })
      ).finally(() => inFlight--)
    }
  })()
  return {
    saves,
    stop: async () => {
      running = false
      await loop
      for (let i = 0; i < 600 && inFlight > 0; i++) await Bun.sleep(50)
    }
  }
}

const api = async (server: Server, method: string, path: string, body?: unknown) => {
  const res = await fetch(`${server.url}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(600_000)
  })
  const text = await res.text()
  return { status: res.status, json: (): unknown => (text === "" ? null : JSON.parse(text)) }
}

const field = (value: unknown, name: string): unknown => {
  if (typeof value !== "object" || value === null) return undefined
  const found: unknown = Object.getOwnPropertyDescriptor(value, name)?.value
  return found
}

/** Whether the large survey's analytics are exact: `expect` holds of them, nothing says they are being rebuilt, and they count what the survey counted just before. */
const analyticsExact = async (server: Server, expect: (analytics: unknown) => boolean) => {
  const survey = await api(server, "GET", `/surveys/${LARGE}`)
  const counted = Number(field(survey.json(), "responseCount"))
  const analytics = await api(server, "GET", `/surveys/${LARGE}/analytics`)
  if (analytics.status !== 200) return false
  const body = analytics.json()
  const stale = field(body, "stale")
  return stale !== true && Number(field(body, "responseCount")) >= counted && expect(body)
}

const questionIds = (analytics: unknown) => {
  const questions = field(analytics, "questions")
  return Array.isArray(questions) ? questions.map((q) => String(field(q, "id"))) : []
}
const optionValues = (analytics: unknown, questionId: string) => {
  const questions = field(analytics, "questions")
  const q = Array.isArray(questions) ? questions.find((x) => field(x, "id") === questionId) : undefined
  const options = field(q, "options")
  return Array.isArray(options) ? options.map((o) => String(field(o, "value"))) : []
}

interface Operation {
  readonly name: string
  /** Runs it; answers a note for the table (its answer). */
  readonly run: () => Promise<string>
  /** What the analytics show once they are exact again after it. */
  readonly exact: (analytics: unknown) => boolean
}

interface Row {
  readonly name: string
  readonly ms: number
  readonly note: string
  readonly exactMs: number | null
  readonly saves: ReadonlyArray<Save>
}

const operations = (server: Server, database: string, responses: number): ReadonlyArray<Operation> => {
  const questions = questionsOf(LARGE)
  const labelled = questions.map((q, i) => (i === 0 ? { ...q, label: "Anything else to add?" } : q))
  const optioned = labelled.map((q) => (q.type === "checkbox" ? { ...q, options: [...(q.options ?? []), "d"] } : q))
  const added = [...optioned, { id: `${LARGE}_extra`, type: "textarea" as const, label: "One more thing?" }]
  const put = (list: ReadonlyArray<Question>) => async () => {
    const res = await api(server, "PUT", `/surveys/${LARGE}/questions`, { questions: list.map(wireQuestion) })
    return `${res.status}`
  }
  const since = iso(Date.now() - 30 * 86_400_000 + 3_600_000)
  return [
    { name: "label edit (PUT …/questions)", run: put(labelled), exact: () => true },
    { name: "option added (PUT …/questions)", run: put(optioned), exact: (a) => optionValues(a, `${LARGE}_pick`).includes("d") },
    { name: "question added (PUT …/questions)", run: put(added), exact: (a) => questionIds(a).includes(`${LARGE}_extra`) },
    {
      name: `erasure of ${erasedCount(responses).toLocaleString("en")} responses`,
      run: async () => {
        const res = await api(server, "POST", "/erasures", { externalUserId: ERASED })
        return `${res.status}, ${String(field(res.json(), "deletedResponses"))} deleted`
      },
      exact: () => true
    },
    {
      name: "30-day webhook recovery",
      run: async () => {
        const res = await api(server, "POST", "/webhooks/recover", { since })
        return `${res.status}, ${String(field(res.json(), "queued"))} queued`
      },
      exact: () => true
    },
    {
      name: "analytics rebuild (CLI)",
      run: async () => {
        const child = Bun.spawn([binary, "analytics", "rebuild", ...databaseArgs(database)], {
          cwd: root,
          env: { ...process.env, LOG_FORMAT: "json", LOG_LEVEL: "warn" },
          stdout: "ignore",
          stderr: "pipe"
        })
        const code = await child.exited
        return code === 0 ? "exit 0" : `exit ${code}: ${(await new Response(child.stderr).text()).slice(0, 200)}`
      },
      exact: () => true
    }
  ]
}

/** Runs the operations one after another under the traffic; answers a row each, the quiet window first. */
const measureAll = async (servers: ReadonlyArray<Server>, database: string, responses: number): Promise<Array<Row>> => {
  const [first] = servers
  if (first === undefined) throw new Error("no server")
  const receiver = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response(null, { status: 204 }) })
  const rows: Array<Row> = []
  try {
    const hook = await api(first, "PUT", "/webhooks", { targetUrl: `http://127.0.0.1:${receiver.port}/hook` })
    if (hook.status !== 200 && hook.status !== 201) throw new Error(`PUT /webhooks answered ${hook.status}`)
    const traffic = await startTraffic(servers)
    try {
      await Bun.sleep(2000) // warm-up, not kept
      const quietFrom = clock()
      await Bun.sleep(quietSeconds * 1000)
      rows.push({ name: `quiet window (${quietSeconds} s)`, ms: clock() - quietFrom, note: "", exactMs: null, saves: traffic.saves.filter((s) => s.at >= quietFrom) })
      for (const op of operations(first, database, responses)) {
        const from = clock()
        const note = await op.run()
        const ms = clock() - from
        let exactMs: number | null = null
        // Bounded: polls every 250 ms for at most `settle` seconds.
        for (let i = 0; i < settleMillis / 250; i++) {
          if (await analyticsExact(first, op.exact)) {
            exactMs = clock() - from
            break
          }
          await Bun.sleep(250)
        }
        const until = from + Math.max(ms, exactMs ?? settleMillis)
        rows.push({ name: op.name, ms, note, exactMs, saves: traffic.saves.filter((s) => s.at >= from && s.at < until) })
        console.error(`  ${op.name}: ${fmt(ms, 0)} ms (${note}), exact after ${exactMs === null ? "never" : fmt(exactMs, 0)} ms (load average ${loadavg()[0]?.toFixed(1)})`)
        await Bun.sleep(1000)
      }
    } finally {
      await traffic.stop()
    }
  } finally {
    void receiver.stop(true)
  }
  return rows
}

const render = (title: string, rows: ReadonlyArray<Row>) => {
  const lines = rows.map((row) => {
    const latencies = row.saves.filter((s) => s.status !== 0).map((s) => s.ms)
    const stats = summary(latencies)
    const unavailable = row.saves.filter((s) => s.status === 503).length
    const others = row.saves.filter((s) => s.status !== 201 && s.status !== 200 && s.status !== 503)
    const byStatus = new Map<number, number>()
    for (const s of others) byStatus.set(s.status, (byStatus.get(s.status) ?? 0) + 1)
    // Status 0: no answer (the connection failed, or 30 s passed).
    const failed = others.length === 0
      ? "0"
      : `${others.length} (${[...byStatus].map(([status, n]) => `${n} × ${status === 0 ? "no answer" : status}`).join(", ")})`
    return [
      row.name,
      row.note === "" ? "" : `${fmt(row.ms / 1000, 2)} s (${row.note})`,
      row.exactMs === null ? (row.note === "" ? "" : "not within the wait") : `${fmt(row.exactMs / 1000, 2)} s`,
      String(row.saves.length),
      fmt(stats.p50, 0),
      fmt(stats.p99, 0),
      fmt(stats.max, 0),
      String(unavailable),
      failed
    ]
  })
  return `${title}\n\n${
    table(["operation", "its time (answer)", "analytics exact after", "saves", "p50 ms", "p99 ms", "max ms", "503", "other non-2xx"], lines)
  }`
}

const work = tempDir()
let postgres: PostgresCluster | undefined
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    postgres?.stop()
    cleanup(work)
    process.exit(130)
  })
}
// Simulated respondents all come from 127.0.0.1; the webhook receiver is local too.
const env = { RESPONDENT_LIMIT_PER_ADDRESS: "1000000", RESPONDENT_LIMIT_PER_SURVEY: "1000000", WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" }
const tables: Array<string> = []
try {
  if (databases.has("sqlite")) {
    const responses = responsesFor("sqlite")
    const cached = sqliteDataset(responses)
    const file = join(work, "large.db")
    copyFileSync(cached, file)
    const db = new Database(file)
    await seedEvents(async (_table, [ids, payloads, times, responseIds]) => {
      const insert = db.prepare(`INSERT INTO events (id, type, workspace_id, survey_id, payload, created_at, response_id)
        VALUES (?, 'response.completed', '${WORKSPACE}', '${LARGE}', ?, ?, ?)`)
      const list = (v: unknown) => (Array.isArray(v) ? v.map(String) : [])
      const [a, b, c, d] = [list(ids), list(payloads), list(times), list(responseIds)]
      db.transaction(() => a.forEach((id, k) => insert.run(id, b[k] ?? "", c[k] ?? "", d[k] ?? "")))()
    }, responses)
    db.exec("UPDATE outbox_cursors SET last_seq = (SELECT MAX(seq) FROM events) WHERE name = 'webhooks'")
    db.close()
    const server = await startServer(binary, file, await freePort(), env)
    try {
      console.error(`SQLite, ${responses} responses, one process:`)
      tables.push(render(`SQLite, one process; large survey of ${responses.toLocaleString("en")} responses; saves at ${rate}/s over ${SURVEYS.length} surveys`, await measureAll([server], file, responses)))
    } finally {
      await server.stop()
    }
  }
  if (databases.has("postgres")) {
    const responses = responsesFor("postgres")
    postgres = await startPostgres()
    const url = `${postgres.base}/postgres`
    await seedPostgres(url, responses)
    const client = new Pg.Client({ connectionString: url })
    await client.connect()
    try {
      await seedEvents(async (_table, [ids, payloads, times, responseIds]) => {
        await client.query(
          `INSERT INTO events (id, type, workspace_id, survey_id, payload, created_at, response_id)
           SELECT id, 'response.completed', $5, $6, payload, created_at, response_id
           FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS e(id, payload, created_at, response_id)`,
          [ids, payloads, times, responseIds, WORKSPACE, LARGE]
        )
      }, responses)
      await client.query("UPDATE outbox_cursors SET last_seq = (SELECT MAX(seq) FROM events) WHERE name = 'webhooks'")
    } finally {
      await client.end()
    }
    const servers = [await startServer(binary, url, await freePort(), env), await startServer(binary, url, await freePort(), env)]
    try {
      console.error(`PostgreSQL, ${responses} responses, two processes:`)
      tables.push(render(`PostgreSQL, two processes; large survey of ${responses.toLocaleString("en")} responses; saves at ${rate}/s over ${SURVEYS.length} surveys`, await measureAll(servers, url, responses)))
    } finally {
      await Promise.all(servers.map((s) => s.stop()))
    }
  }
} finally {
  postgres?.stop()
  cleanup(work)
}

console.log(`bench:large — ${machine()}, load average at the end ${loadavg().map((l) => l.toFixed(1)).join(" ")}`)
console.log("Saves are counted from an operation's start until the analytics are exact again (or its end, if later).")
console.log(`Targets: 0 × 503, save p99 under 250 ms, no save over 1 s, a question edit answered within 2 s.\n`)
console.log(tables.join("\n\n"))
