/**
 * Analytics benchmark: GET /surveys/{id}/analytics latency for a survey of 1,000 and of
 * 1,000,000 responses (stored aggregates) beside a from-scratch SQL aggregation of the same
 * surveys, and freshness (completion → included) at 100 completions/s beside a direct count.
 *
 *   bun scripts/bench/analytics.ts [LARGE_RESPONSES=1000000]
 */
import { Database } from "bun:sqlite"
import { Schema } from "effect"
import { loadavg } from "node:os"
import {
  type BenchQuestion,
  buildBinary,
  bulkResponses,
  cleanup,
  fmt,
  machine,
  prepare,
  runCli,
  startServer,
  summary,
  table,
  tempDir,
  TOKEN
} from "./support.js"

const large = Number(process.argv[2] ?? 1_000_000)
const small = 1_000
const questions: ReadonlyArray<BenchQuestion> = [
  { id: "q_num", type: "number", label: "How many" },
  { id: "q_scale", type: "scale", label: "Rate", options: ["1", "2", "3", "4", "5"] },
  { id: "q_pick", type: "checkbox", label: "Pick", options: ["a", "b", "c", "d"] },
  { id: "q_rank", type: "sort", label: "Rank", options: ["x", "y", "z"] },
  { id: "q_text", type: "textarea", label: "Comment" }
]

const dir = tempDir()
const log = (line: string) => console.error(`[bench:analytics] ${line}`)
/** The 1-minute load average: the machine may be shared. */
const load = () => loadavg()[0]?.toFixed(1) ?? "?"
const loadAtStart = load()
const AnalyticsBody = Schema.Struct({
  completedCount: Schema.Number,
  responseCount: Schema.Number,
  questions: Schema.Array(Schema.Unknown)
})
const decodeAnalytics = Schema.decodeUnknownSync(AnalyticsBody)
const decodeCount = Schema.decodeUnknownSync(Schema.NullOr(Schema.Struct({ n: Schema.Number })))
try {
  const dbPath = prepare(dir, [
    { id: "srv_small", questions },
    { id: "srv_large", questions },
    { id: "srv_fresh", questions }
  ])
  let t = performance.now()
  bulkResponses(dbPath, "srv_small", questions, small, 1)
  bulkResponses(dbPath, "srv_large", questions, large, 2)
  const generated = (performance.now() - t) / 1000
  log(`generated ${small + large} responses in ${fmt(generated)} s`)
  t = performance.now()
  runCli(["analytics", "rebuild", "--db", dbPath])
  const rebuilt = (performance.now() - t) / 1000
  log(`full rebuild in ${fmt(rebuilt)} s`)

  const server = await startServer(buildBinary(), dbPath, 18000 + Math.floor(Math.random() * 1000))
  const db = new Database(dbPath)
  db.exec("PRAGMA busy_timeout = 5000; PRAGMA synchronous = NORMAL")
  try {
    const analytics = async (surveyId: string) => {
      const res = await fetch(`${server.url}/api/v1/surveys/${surveyId}/analytics`, {
        headers: { authorization: `Bearer ${TOKEN}` }
      })
      if (!res.ok) throw new Error(`analytics answered ${res.status}`)
      return decodeAnalytics(await res.json())
    }
    const check = await analytics("srv_large")
    if (check.responseCount !== large || check.questions.length !== questions.length) {
      throw new Error(`expected ${large} responses and ${questions.length} questions in the analytics`)
    }

    // Latency: interleaved so that both sizes see the same machine state.
    const rounds = 300
    const lat: Record<string, Array<number>> = { srv_small: [], srv_large: [] }
    for (let i = 0; i < 30; i++) await analytics(i % 2 === 0 ? "srv_small" : "srv_large")
    for (let i = 0; i < rounds; i++) {
      for (const id of ["srv_small", "srv_large"] as const) {
        const s = performance.now()
        await analytics(id)
        lat[id]?.push(performance.now() - s)
      }
    }

    // Baseline: the same figures' core computed from scratch by SQL over the raw rows.
    const scratchCounts = db.prepare("SELECT COUNT(*) AS n, SUM(completed) AS c FROM responses WHERE survey_id = ?")
    const scratchAnswers = db.prepare(
      `SELECT a.question_id, COUNT(*) AS n, SUM(CAST(a.value AS REAL)) AS s,
              SUM(CAST(a.value AS REAL) * CAST(a.value AS REAL)) AS ss
       FROM responses r JOIN answers a ON a.response_id = r.id WHERE r.survey_id = ? GROUP BY a.question_id`
    )
    const scratch = (id: string, runs: number) => {
      const out: Array<number> = []
      for (let i = 0; i < runs; i++) {
        const s = performance.now()
        scratchCounts.all(id)
        scratchAnswers.all(id)
        out.push(performance.now() - s)
      }
      return out
    }
    const scratchSmall = scratch("srv_small", 50)
    const scratchLarge = scratch("srv_large", 3)

    // Freshness: 100 completions/s written the way the service writes them (response, answers and
    // a change row in one transaction); two pollers watch for them: the endpoint, and a direct count.
    const rate = 100
    const seconds = 10
    const total = rate * seconds
    const insertResponse = db.prepare(
      "INSERT INTO responses (id, survey_id, completed, completed_at, created_at, updated_at) VALUES (?, 'srv_fresh', 1, ?, ?, ?)"
    )
    const insertAnswer = db.prepare("INSERT INTO answers (response_id, question_id, value, \"values\") VALUES (?, 'srv_fresh_q_num', ?, ?)")
    const insertChange = db.prepare(
      "INSERT INTO response_changes (response_id, survey_id, changed_at) VALUES (?, 'srv_fresh', ?)"
    )
    const write = db.transaction((i: number) => {
      const id = `rsp_fresh_${i}`
      const now = new Date().toISOString()
      insertResponse.run(id, now, now, now)
      insertAnswer.run(id, String(i % 100), JSON.stringify([String(i % 100)]))
      insertChange.run(id, now)
    })
    const committed: Array<number> = []
    const seenHttp: Array<readonly [number, number]> = []
    const seenSql: Array<readonly [number, number]> = []
    const directCount = db.prepare("SELECT COUNT(*) AS n FROM responses WHERE survey_id = 'srv_fresh' AND completed = 1")
    let writing = true
    const writer = (async () => {
      const start = performance.now()
      for (let i = 0; i < total; i++) {
        const due = start + (i * 1000) / rate
        const wait = due - performance.now()
        if (wait > 0) await Bun.sleep(wait)
        write(i)
        committed.push(performance.now())
      }
      writing = false
    })()
    const httpPoller = (async () => {
      let last = 0
      while (writing || last < total) {
        const body = await analytics("srv_fresh")
        last = body.completedCount
        seenHttp.push([performance.now(), last])
        await Bun.sleep(5)
      }
    })()
    const sqlPoller = (async () => {
      let last = 0
      while (writing || last < total) {
        const row = decodeCount(directCount.get())
        last = row?.n ?? 0
        seenSql.push([performance.now(), last])
        await Bun.sleep(5)
      }
    })()
    await Promise.all([writer, httpPoller, sqlPoller])
    const delays = (seen: ReadonlyArray<readonly [number, number]>) =>
      committed.map((at, i) => {
        const hit = seen.find(([, count]) => count >= i + 1)
        return hit === undefined ? Number.NaN : Math.max(0, hit[0] - at)
      })
    const fresh = summary(delays(seenHttp))
    const direct = summary(delays(seenSql))
    const achievedRate = total / ((committed[committed.length - 1]! - committed[0]!) / 1000)

    const sS = summary(lat.srv_small ?? [])
    const sL = summary(lat.srv_large ?? [])
    const bS = summary(scratchSmall)
    const bL = summary(scratchLarge)
    const lines = [
      `Analytics benchmark (${new Date().toISOString()}, ${machine()}; load average ${loadAtStart} at the start, ${load()} at the end, on a machine shared with other work)`,
      "",
      `Setup: ${questions.length} questions (number, scale, checkbox, sort, textarea); data generated in ${
        fmt(generated)
      } s; full \`analytics rebuild\` of ${small + large} responses took ${fmt(rebuilt)} s.`,
      "",
      "Latency of GET /surveys/{id}/analytics over HTTP (sequential, server process) vs a from-scratch SQL aggregation (in-process bun:sqlite):",
      "",
      table(["survey", "responses", "endpoint p50 ms", "endpoint p95 ms", "endpoint mean ms", "from-scratch SQL mean ms"], [
        ["srv_small", String(small), fmt(sS.p50, 2), fmt(sS.p95, 2), fmt(sS.mean, 2), fmt(bS.mean, 2)],
        ["srv_large", String(large), fmt(sL.p50, 2), fmt(sL.p95, 2), fmt(sL.mean, 2), fmt(bL.mean, 2)],
        ["ratio large/small", "", fmt(sL.p50 / sS.p50, 2), fmt(sL.p95 / sS.p95, 2), fmt(sL.mean / sS.mean, 2), fmt(bL.mean / bS.mean, 0)]
      ]),
      "",
      `Freshness at ${rate} completions/s for ${seconds} s (achieved ${fmt(achievedRate)}/s): time from commit to being counted, pollers every ~5 ms:`,
      "",
      table(["observer", "p50 ms", "p99 ms", "max ms"], [
        ["GET /analytics (stored aggregates)", fmt(fresh.p50, 0), fmt(fresh.p99, 0), fmt(fresh.max, 0)],
        ["direct COUNT(*) on responses (baseline)", fmt(direct.p50, 0), fmt(direct.p99, 0), fmt(direct.max, 0)]
      ]),
      ""
    ]
    console.log(lines.join("\n"))
  } finally {
    db.close()
    await server.stop()
  }
} finally {
  cleanup(dir)
}
