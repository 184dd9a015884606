/**
 * Shared pieces of the analytics and CSV benchmarks: a temporary database filled directly
 * through bun:sqlite, the real server binary entry point as a child process, and figures.
 */
import { Database } from "bun:sqlite"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { seededRandom } from "../../src/Demo/DemoData.js"
import { answersJson } from "../../src/Responses/AnswerWire.js"
import { BENCH_PLAN } from "./Dataset.js"

export const root = join(import.meta.dir, "..", "..")
export const TOKEN = "sk_bench_editor_aaaaaaaaaaaaaaaa"

export interface BenchQuestion {
  readonly id: string
  readonly type: "textarea" | "email" | "checkbox" | "number" | "scale" | "sort"
  readonly label: string
  readonly options?: ReadonlyArray<string>
}

/** Question ids are global: each survey gets its own copy of a question list. */
export const questionId = (surveyId: string, q: BenchQuestion) => `${surveyId}_${q.id}`

export const tempDir = () => mkdtempSync(join(tmpdir(), "survey-bench-"))
export const cleanup = (dir: string) => rmSync(dir, { recursive: true, force: true })

const cli = (args: ReadonlyArray<string>) => {
  const result = Bun.spawnSync(["bun", join(root, "src/main.ts"), ...args], {
    cwd: root,
    env: { ...process.env, LOG_FORMAT: "json", LOG_LEVEL: "warn" },
    stdout: "pipe",
    stderr: "pipe"
  })
  if (result.exitCode !== 0) {
    throw new Error(`survey-service ${args.join(" ")} failed: ${result.stderr.toString()}`)
  }
  return result.stdout.toString()
}

/** Migrates the file and imports tenancy, a key with generous limits, and the surveys (through the CLI). */
export const prepare = (
  dir: string,
  surveys: ReadonlyArray<{ readonly id: string; readonly questions: ReadonlyArray<BenchQuestion> }>
) => {
  const dbPath = join(dir, "bench.db")
  const fixture = {
    plans: [BENCH_PLAN],
    accounts: [{ id: "acc_bench", planId: "bench" }],
    workspaces: [{ id: "ws_bench", ownerAccountId: "acc_bench" }],
    members: [{ workspaceId: "ws_bench", accountId: "acc_bench", role: "owner" }],
    apiKeys: [{ token: TOKEN, workspaceId: "ws_bench", createdBy: "acc_bench", surveyIds: null, revoked: false }],
    surveys: surveys.map((s) => ({
      id: s.id,
      workspaceId: "ws_bench",
      title: s.id,
      status: "published",
      createdAt: "2026-01-01T00:00:00.000Z",
      updatedAt: "2026-01-01T00:00:00.000Z",
      questions: s.questions.map((q, i) => ({
        id: questionId(s.id, q),
        type: q.type,
        label: q.label,
        order: i + 1,
        allowMultiple: q.type === "checkbox",
        options: (q.options ?? []).map((o) => ({ value: o, label: o }))
      }))
    }))
  }
  const fixturePath = join(dir, "fixture.json")
  writeFileSync(fixturePath, JSON.stringify(fixture))
  cli(["import", fixturePath, "--db", dbPath])
  return dbPath
}

export const runCli = (args: ReadonlyArray<string>) => cli(args)

/** A deterministic pseudo-random source, so that runs are comparable. */
export const random = seededRandom

/** An answer's values for a question, drawn from `rnd`. */
export const answerFor = (q: BenchQuestion, rnd: () => number, n: number): Array<string> => {
  const options = q.options ?? []
  switch (q.type) {
    case "number":
      return [String(Math.floor(rnd() * 101))]
    case "scale":
      return [options[Math.floor(rnd() * options.length)] ?? "1"]
    case "checkbox":
      return options.filter(() => rnd() < 0.4)
    case "sort":
      return [...options].sort(() => rnd() - 0.5).slice(0, 1 + Math.floor(rnd() * options.length))
    case "email":
      return [`person${n}@example.com`]
    case "textarea":
      return [rnd() < 0.1 ? `=note ${n}, "quoted"` : `comment number ${n}`]
  }
}

export const storedValue = (type: BenchQuestion["type"], values: ReadonlyArray<string>) =>
  (type === "checkbox" || type === "sort") && values.length > 1 ? JSON.stringify(values) : values[0] ?? ""

const iso = (ms: number) => new Date(ms).toISOString()

/**
 * Inserts `count` responses with answers straight into the file, in large transactions
 * (no change rows: the benchmark then runs a full `analytics rebuild`).
 */
export const bulkResponses = (
  dbPath: string,
  surveyId: string,
  questions: ReadonlyArray<BenchQuestion>,
  count: number,
  seed = 1
) => {
  const db = new Database(dbPath)
  db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF; PRAGMA busy_timeout = 5000")
  const insertResponse = db.prepare(
    "INSERT INTO responses (id, survey_id, external_user_id, completed, completed_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
  )
  const insertAnswer = db.prepare("INSERT INTO answers (response_id, question_id, value, \"values\") VALUES (?, ?, ?, ?)")
  // The response's rendering of its answers (src/Responses/AnswerDocumentRepo.ts), as the service's writers store it.
  const render = db.prepare(
    "UPDATE responses SET answers_json = ?, answers_layout = (SELECT answer_layout FROM surveys WHERE id = ?) WHERE id = ?"
  )
  const rnd = random(seed)
  const start = Date.UTC(2026, 0, 2)
  const batch = 50_000
  for (let from = 0; from < count; from += batch) {
    db.transaction(() => {
      for (let i = from; i < Math.min(count, from + batch); i++) {
        const id = `rsp_${surveyId}_${String(i).padStart(8, "0")}`
        const completed = rnd() < 0.8
        const created = start + i * 1000
        insertResponse.run(id, surveyId, i % 7 === 0 ? `user-${i}` : null, completed ? 1 : 0,
          completed ? iso(created + 60_000) : null, iso(created), iso(created))
        const answered = completed ? questions.length : Math.floor(rnd() * questions.length)
        const written: Array<{ questionId: string; value: string; values: Array<string>; type: string; position: number }> = []
        for (let k = 0; k < answered; k++) {
          const q = questions[k]
          if (q === undefined || rnd() < 0.05) continue
          const values = answerFor(q, rnd, i)
          if (values.length === 0) continue
          const answer = { questionId: questionId(surveyId, q), value: storedValue(q.type, values), values, type: q.type, position: k + 1 }
          insertAnswer.run(id, answer.questionId, answer.value, JSON.stringify(values))
          written.push(answer)
        }
        render.run(answersJson(written, (a) => a.values), surveyId, id)
      }
    })()
  }
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)")
  db.exec(`UPDATE surveys SET response_count = (SELECT COUNT(*) FROM responses WHERE survey_id = '${surveyId}') WHERE id = '${surveyId}'`)
  db.close()
}

export interface Server {
  readonly url: string
  readonly pid: number
  readonly stop: () => Promise<void>
}

/** Builds the shipped binary (`bun run build`), which is what the benchmarks serve with. */
export const buildBinary = () => {
  const result = Bun.spawnSync(["bun", "run", "build"], { cwd: root, stdout: "pipe", stderr: "pipe" })
  if (result.exitCode !== 0) throw new Error(`build failed: ${result.stderr.toString()}`)
  return join(root, "dist/survey-service")
}

/** The CLI's database option for `database`: a PostgreSQL URL (`--database-url`) or a SQLite file (`--db`). */
export const databaseArgs = (database: string) =>
  /^postgres(ql)?:\/\//.test(database) ? ["--database-url", database] : ["--db", database]

/** `survey-service serve` (the compiled binary) on a local port and database, waiting for /healthz. */
export const startServer = async (
  binary: string,
  database: string,
  port: number,
  extraEnv: Record<string, string> = {}
): Promise<Server> => {
  const proc = Bun.spawn([binary, "serve", ...databaseArgs(database), "--port", String(port)], {
    cwd: root,
    env: { ...process.env, LOG_FORMAT: "json", LOG_LEVEL: "warn", ...extraEnv },
    stdout: "ignore",
    stderr: "inherit"
  })
  const url = `http://127.0.0.1:${port}`
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) break
    } catch {
      // not listening yet
    }
    await Bun.sleep(100)
  }
  return {
    url,
    pid: proc.pid,
    stop: async () => {
      proc.kill()
      await proc.exited
    }
  }
}

/** Peak resident set size of a process, in MB (VmHWM). */
export const peakRssMb = (pid: number) => {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))
  return match === null ? Number.NaN : Number(match[1]) / 1024
}

export const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN

export const summary = (samples: ReadonlyArray<number>) => {
  const sorted = [...samples].sort((a, b) => a - b)
  return {
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1] ?? Number.NaN,
    mean: sorted.reduce((s, x) => s + x, 0) / Math.max(1, sorted.length)
  }
}

export const fmt = (n: number, digits = 1) => Number.isFinite(n) ? n.toFixed(digits) : "n/a"

export const table = (headers: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>) =>
  [`| ${headers.join(" | ")} |`, `|${headers.map(() => "---").join("|")}|`, ...rows.map((r) => `| ${r.join(" | ")} |`)]
    .join("\n")

export const machine = () => {
  const cpu = /model name\s*:\s*(.*)/.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1] ?? "unknown CPU"
  return `${navigator.hardwareConcurrency} × ${cpu}, Bun ${Bun.version}`
}
