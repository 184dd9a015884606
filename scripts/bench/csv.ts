/**
 * CSV export benchmark: GET /surveys/{id}/responses?format=csv of 10,000 and 1,000,000
 * responses × 10 questions from the compiled binary with no environment flags (rows/s, peak RSS
 * of the server), beside a raw bun:sqlite CSV writer over the same storage in a process of its
 * own (scripts/bench/csvBaseline.ts). Both outputs must be the same bytes (SHA-256 compared).
 * Writes its table into docs/performance.md unless --no-write.
 *
 *   bun scripts/bench/csv.ts [LARGE_RESPONSES=1000000] [--no-write] [--fresh]
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { loadavg } from "node:os"
import { join } from "node:path"
import { quotaFilePath } from "../../src/Quota/QuotaFileSql.js"
import {
  type BenchQuestion,
  buildBinary,
  bulkResponses,
  cleanup,
  fmt,
  machine,
  peakRssMb,
  prepare,
  root,
  runCli,
  startServer,
  table,
  tempDir,
  TOKEN
} from "./support.js"

const positional = process.argv.slice(2).filter((a) => !a.startsWith("--"))
const large = Number(positional[0] ?? 1_000_000)
const noWrite = process.argv.includes("--no-write")
const small = 10_000
const questions: ReadonlyArray<BenchQuestion> = [
  { id: "q_text", type: "textarea", label: "Comment" },
  { id: "q_mail", type: "email", label: "Email" },
  { id: "q_num", type: "number", label: "How many" },
  { id: "q_scale", type: "scale", label: "Rate", options: ["1", "2", "3", "4", "5"] },
  { id: "q_pick", type: "checkbox", label: "Pick", options: ["a", "b", "c", "d"] },
  { id: "q_rank", type: "sort", label: "Rank", options: ["x", "y", "z"] },
  { id: "q_text2", type: "textarea", label: "Comment" },
  { id: "q_num2", type: "number", label: "Seats" },
  { id: "q_scale2", type: "scale", label: "Rate again", options: ["1", "2", "3"] },
  { id: "q_text3", type: "textarea", label: "Anything else" }
]

const dir = tempDir()
/** User + system CPU seconds of a process so far (/proc/PID/stat, 100 Hz ticks). */
const cpuSeconds = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /, "").split(" ")
  return (Number(fields[11]) + Number(fields[12])) / 100
}
const log = (line: string) => console.error(`[bench:csv] ${line}`)
/** The 1-minute load average: the machine may be shared. */
const load = () => loadavg()[0]?.toFixed(1) ?? "?"
const loadAtStart = load()
try {
  // The generated file is kept in .bench/ (by size and generator) for the next run; --fresh rebuilds it.
  const stamp = new Bun.CryptoHasher("sha256")
    .update(readFileSync(join(root, "scripts/bench/support.ts")))
    .update(JSON.stringify({ questions, small }))
    .digest("hex")
    .slice(0, 12)
  const cached = join(root, ".bench", `csv-${large}-${stamp}.db`)
  const binary = buildBinary()
  let dbPath = cached
  if (existsSync(cached) && !process.argv.includes("--fresh")) {
    runCli(["migrate", "--db", cached])
    log(`dataset: ${cached} (cached; --fresh rebuilds it)`)
  } else {
    dbPath = prepare(dir, [{ id: "srv_small", questions }, { id: "srv_large", questions }])
    const t = performance.now()
    bulkResponses(dbPath, "srv_small", questions, small, 3)
    bulkResponses(dbPath, "srv_large", questions, large, 4)
    log(`generated ${small + large} responses in ${fmt((performance.now() - t) / 1000)} s`)
    mkdirSync(join(root, ".bench"), { recursive: true })
    renameSync(dbPath, cached)
    // The request quota's counters live in a file beside the database (src/Quota/QuotaFileSql.ts):
    // it moves with it, or the next run on the cached file starts without it.
    rmSync(quotaFilePath(cached), { force: true })
    if (existsSync(quotaFilePath(dbPath))) renameSync(quotaFilePath(dbPath), quotaFilePath(cached))
    dbPath = cached
  }

  /** One export through HTTP: seconds, bytes and their SHA-256, after checking the row count. */
  const exportOnce = async (url: string, pid: number, surveyId: string, size: number) => {
    const start = performance.now()
    const cpuBefore = cpuSeconds(pid)
    const res = await fetch(`${url}/api/v1/surveys/${surveyId}/responses?format=csv`, {
      headers: { authorization: `Bearer ${TOKEN}` }
    })
    if (!res.ok || res.body === null) throw new Error(`export answered ${res.status}`)
    let bytes = 0
    let lines = 0
    const hash = new Bun.CryptoHasher("sha256")
    const reader = res.body.getReader()
    while (true) {
      const { done, value } = await reader.read()
      if (done) break
      bytes += value.byteLength
      hash.update(value)
      for (let i = 0; i < value.length; i++) if (value[i] === 10) lines++
    }
    const seconds = (performance.now() - start) / 1000
    const cpu = cpuSeconds(pid) - cpuBefore
    if (lines - 1 !== size) throw new Error(`expected ${size} rows, got ${lines - 1}`)
    return { seconds, cpu, bytes, sha256: hash.digest("hex") }
  }
  /** The raw exporter in a process of its own. */
  const rawExport = (db: string, surveyId: string) => {
    const run = Bun.spawnSync(
      ["bun", join(root, "scripts/bench/csvBaseline.ts"), db, surveyId, join(dir, "baseline.csv")],
      { cwd: root, stdout: "pipe", stderr: "inherit" }
    )
    const b: unknown = JSON.parse(run.stdout.toString())
    const field = (key: string): unknown => (typeof b === "object" && b !== null ? Reflect.get(b, key) : undefined)
    const figure = (key: string) => {
      const v = field(key)
      return typeof v === "number" ? v : Number.NaN
    }
    return {
      rows: figure("rows"),
      seconds: figure("seconds"),
      cpu: figure("cpuSeconds"),
      peakRssMb: figure("peakRssMb"),
      sha256: field("sha256")
    }
  }
  const results: Array<Array<string>> = []
  const server = await startServer(binary, dbPath, 19000 + Math.floor(Math.random() * 1000))
  const startRss = peakRssMb(server.pid)
  try {
    // Two rounds, export then raw exporter, best of each: the machine is shared and noisy.
    for (const [surveyId, size] of [["srv_small", small], ["srv_large", large]] as const) {
      let rate = 0
      let baselineRate = 0
      let cpuRate = 0
      let baselineCpuRate = 0
      let bytes = 0
      let baselinePeak = 0
      for (let round = 0; round < 2; round++) {
        const exported = await exportOnce(server.url, server.pid, surveyId, size)
        bytes = exported.bytes
        rate = Math.max(rate, size / exported.seconds)
        cpuRate = Math.max(cpuRate, size / exported.cpu)
        const raw = rawExport(dbPath, surveyId)
        if (raw.sha256 !== exported.sha256) throw new Error(`${surveyId}: the export and the raw exporter differ`)
        baselineRate = Math.max(baselineRate, raw.rows / raw.seconds)
        baselineCpuRate = Math.max(baselineCpuRate, raw.rows / raw.cpu)
        baselinePeak = Math.max(baselinePeak, raw.peakRssMb)
        log(`${surveyId}: ${size} rows in ${fmt(exported.seconds, 2)} s, raw ${fmt(raw.seconds, 2)} s, same bytes`)
      }
      results.push([
        String(size),
        fmt(rate, 0),
        fmt(baselineRate, 0),
        fmt(rate / baselineRate, 2),
        fmt(cpuRate, 0),
        fmt(baselineCpuRate, 0),
        fmt(cpuRate / baselineCpuRate, 2),
        fmt(bytes / 1024 / 1024, 0),
        fmt(peakRssMb(server.pid), 0),
        fmt(baselinePeak, 0)
      ])
    }
  } finally {
    await server.stop()
  }
  const lines = [
    `Measured ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC on ${machine()}, on a machine shared ` +
    `with other work (load average ${loadAtStart} at the start, ${load()} at the end; figures move between runs).`,
    "",
    `${questions.length} questions per response, served by the compiled binary started without any environment ` +
    `flag. Server peak RSS is its VmHWM after each export (cumulative since start; ${fmt(startRss, 0)} MB after ` +
    "start-up). The baseline is the raw exporter of scripts/bench/csvBaseline.ts (same statement, same bytes, " +
    "checked by SHA-256) in its own process, run right after each export; two rounds each, the better one reported. Rows per CPU second divide by " +
    "the process's own user + system time, which other work on the machine disturbs much less than the wall clock.",
    "",
    table([
      "responses",
      "export rows/s",
      "raw exporter rows/s",
      "ratio",
      "export rows per CPU s",
      "raw rows per CPU s",
      "CPU ratio",
      "MB",
      "server peak RSS MB",
      "raw exporter peak RSS MB"
    ], results)
  ]
  console.log(lines.join("\n"))
  if (!noWrite) {
    const doc = join(root, "docs", "performance.md")
    const begin = "<!-- bench:csv:begin -->"
    const end = "<!-- bench:csv:end -->"
    const current = existsSync(doc) ? readFileSync(doc, "utf8") : ""
    const from = current.indexOf(begin)
    const to = current.indexOf(end)
    const block = `${begin}\n${lines.join("\n")}\n${end}`
    writeFileSync(
      doc,
      from >= 0 && to > from
        ? current.slice(0, from) + block + current.slice(to + end.length)
        : `${current.trimEnd()}\n\n## CSV export: \`bun run bench:csv\`\n\n${block}\n`
    )
    log(`wrote the table to ${doc}`)
  }
} finally {
  cleanup(dir)
}
