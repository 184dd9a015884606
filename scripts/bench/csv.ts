/**
 * CSV export benchmark: GET /surveys/{id}/responses?format=csv of 10,000 and 1,000,000
 * responses × 10 questions from the server process (rows/s, peak RSS of the server), beside
 * a raw bun:sqlite CSV writer over the same rows in a process of its own.
 *
 *   bun scripts/bench/csv.ts [LARGE_RESPONSES=1000000]
 */
import { join } from "node:path"
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
  startServer,
  table,
  tempDir,
  TOKEN
} from "./support.js"

const large = Number(process.argv[2] ?? 1_000_000)
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
const log = (line: string) => console.error(`[bench:csv] ${line}`)
try {
  const dbPath = prepare(dir, [{ id: "srv_small", questions }, { id: "srv_large", questions }])
  let t = performance.now()
  bulkResponses(dbPath, "srv_small", questions, small, 3)
  bulkResponses(dbPath, "srv_large", questions, large, 4)
  log(`generated ${small + large} responses in ${fmt((performance.now() - t) / 1000)} s`)

  const binary = buildBinary()
  // The default heap sizing of JavaScriptCore follows the machine's RAM; the second configuration
  // tells it the process has 128 MiB, as a memory-limited container would.
  const configurations = [
    { name: "default", env: {} },
    { name: "BUN_JSC_forceRAMSize=128MiB", env: { BUN_JSC_forceRAMSize: String(128 * 1024 * 1024) } }
  ] as const
  const results: Array<Array<string>> = []
  const startRss: Array<string> = []
  for (const configuration of configurations) {
    const server = await startServer(binary, dbPath, 19000 + Math.floor(Math.random() * 1000), configuration.env)
    startRss.push(`${configuration.name}: ${fmt(peakRssMb(server.pid), 0)} MB`)
    try {
      for (const [surveyId, size] of [["srv_small", small], ["srv_large", large]] as const) {
        const start = performance.now()
        const res = await fetch(`${server.url}/api/v1/surveys/${surveyId}/responses?format=csv`, {
          headers: { authorization: `Bearer ${TOKEN}` }
        })
        if (!res.ok || res.body === null) throw new Error(`export answered ${res.status}`)
        let bytes = 0
        let lines = 0
        const reader = res.body.getReader()
        while (true) {
          const { done, value } = await reader.read()
          if (done) break
          bytes += value.byteLength
          for (let i = 0; i < value.length; i++) if (value[i] === 10) lines++
        }
        const seconds = (performance.now() - start) / 1000
        const rows = lines - 1
        if (rows !== size) throw new Error(`expected ${size} rows, got ${rows}`)
        const serverPeak = peakRssMb(server.pid)

        const baseline = Bun.spawnSync(
          ["bun", join(root, "scripts/bench/csvBaseline.ts"), dbPath, surveyId, join(dir, "baseline.csv")],
          { cwd: root, stdout: "pipe", stderr: "inherit" }
        )
        const b: unknown = JSON.parse(baseline.stdout.toString())
        const figure = (key: string) => {
          const v: unknown = typeof b === "object" && b !== null ? Reflect.get(b, key) : undefined
          return typeof v === "number" ? v : Number.NaN
        }
        results.push([
          configuration.name,
          String(size),
          fmt(rows / seconds, 0),
          fmt(seconds, 2),
          fmt(bytes / 1024 / 1024, 0),
          fmt(serverPeak, 0),
          fmt(figure("rows") / figure("seconds"), 0),
          fmt(figure("peakRssMb"), 0)
        ])
        log(`${configuration.name} ${surveyId}: ${rows} rows in ${fmt(seconds, 2)} s`)
      }
    } finally {
      await server.stop()
    }
  }
  console.log([
    `CSV export benchmark (${new Date().toISOString()}, ${machine()})`,
    "",
    `${questions.length} questions per response, served by the compiled binary. Server peak RSS is its VmHWM ` +
    `after each export (cumulative since start; after start-up ${startRss.join(", ")}). The baseline is a raw ` +
    "bun:sqlite writer in its own process, run right after each export.",
    "",
    table(["server", "responses", "endpoint rows/s", "endpoint s", "MB", "server peak RSS MB", "baseline rows/s", "baseline peak RSS MB"], results),
    ""
  ].join("\n"))
} finally {
  cleanup(dir)
}
