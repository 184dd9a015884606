/**
 * `bun run bench:parity --against <git ref>`: the read answers of this tree and of another commit,
 * compared byte for byte on the benchmark's dataset (scripts/bench/Dataset.ts, a smaller copy).
 *
 * Both servers start from copies of one SQLite database and receive the same requests in the same
 * order, so their request counts (RateLimit-* headers, /usage) agree too. Walked: /openapi.json,
 * the survey list page by page, each survey, its questions, analytics, responses pages (plain,
 * filtered, followed by cursor), responses by id, the CSV export, /usage, and the documented
 * errors of unknown ids and bad cursors. Prints one line per answer and a summary; exits 1 on the
 * first difference. It measures nothing: a check that a change kept every answer.
 *
 * Flags: --against REF (required), --surveys N (6), --responses N (per survey, 300), --database
 * postgres (both servers on copies of one database in a throwaway PostgreSQL cluster instead).
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { BENCH_TOKEN, DEEP_SURVEY, DEEP_TOKEN, surveyId, writeDataset } from "./Dataset.js"
import { freePort, sleep, spawnedProcesses } from "./Processes.js"
import { type PgDatabases, preparePostgres } from "./PgDataset.js"

const { values: flags } = parseArgs({
  options: {
    against: { type: "string" },
    surveys: { type: "string", default: "6" },
    responses: { type: "string", default: "300" },
    database: { type: "string", default: "sqlite" }
  },
  strict: true
})
if (flags.against === undefined) {
  console.error("usage: bun run bench:parity --against <git ref> [--surveys N] [--responses N]")
  process.exit(2)
}

const root = join(import.meta.dir, "..", "..")
const { children, stopAll } = spawnedProcesses()

const run = (cmd: ReadonlyArray<string>, cwd = root) => {
  const result = Bun.spawnSync([...cmd], { cwd, stdout: "pipe", stderr: "pipe" })
  if (result.exitCode !== 0) throw new Error(`${cmd.join(" ")} failed (${result.exitCode}):\n${result.stderr.toString()}`)
  return result.stdout.toString().trim()
}

/** The other commit's source tree, unpacked beside this one's dependencies. */
const treeAt = (ref: string, dir: string) => {
  const commit = run(["git", "rev-parse", "--short", ref])
  const tree = join(dir, `tree-${commit}`)
  mkdirSync(tree)
  run(["sh", "-c", `git archive ${commit} | tar -x -C ${JSON.stringify(tree)}`])
  symlinkSync(join(root, "node_modules"), join(tree, "node_modules"))
  return { commit, tree }
}

const databaseFiles = ["", "-wal", "-shm", "-quota", "-quota-wal", "-quota-shm"]

interface Server {
  readonly label: string
  readonly port: number
}

/** `database`: a SQLite file, or with --database postgres the URL of a PostgreSQL database. */
const start = async (label: string, tree: string, database: string): Promise<Server> => {
  const port = freePort()
  const where = flags.database === "postgres" ? ["--database-url", database] : ["--db", database]
  const child = Bun.spawn(["bun", join(tree, "src/main.ts"), "serve", "--port", String(port), ...where], {
    cwd: tree,
    stdout: "ignore",
    stderr: "inherit",
    env: { ...process.env, LOG_LEVEL: "warn" }
  })
  children.add(child)
  const deadline = performance.now() + 30_000
  while (performance.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${label} exited before answering`)
    try {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`)
      await res.arrayBuffer()
      if (res.status === 200) return { label, port }
    } catch {
      // not listening yet
    }
    await sleep(20)
  }
  throw new Error(`${label} did not answer within 30 s`)
}

interface Answer {
  readonly status: number
  readonly body: string
  readonly headers: string
}

// Headers that differ between two correct answers: the date, and the quota's reset when the two
// requests straddle a second boundary (asked again once, below).
const volatile = new Set(["date"])

const ask = async (server: Server, path: string, token: string | undefined): Promise<Answer> => {
  const res = await fetch(`http://127.0.0.1:${server.port}${path}`, {
    headers: { "x-request-id": "parity-check-0001", ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) }
  })
  const body = await res.text()
  const headers = [...res.headers.entries()].filter(([name]) => !volatile.has(name)).map(([n, v]) => `${n}: ${v}`).sort()
  return { status: res.status, body, headers: headers.join("\n") }
}

let compared = 0
let bytes = 0

/** Both servers' answers to `path`; throws on a difference. Answers the current tree's body. */
const compare = async (a: Server, b: Server, path: string, token: string | undefined = BENCH_TOKEN) => {
  let x = await ask(a, path, token)
  let y = await ask(b, path, token)
  if (x.body !== y.body || x.headers !== y.headers || x.status !== y.status) {
    x = await ask(a, path, token)
    y = await ask(b, path, token)
  }
  if (x.status !== y.status) throw new Error(`${path}: status ${x.status} (${a.label}) vs ${y.status} (${b.label})`)
  if (x.body !== y.body) {
    const at = [...x.body].findIndex((c, i) => c !== y.body[i])
    throw new Error(`${path}: bodies differ at character ${at}:\n  ${a.label}: ${x.body.slice(at, at + 120)}\n  ${b.label}: ${y.body.slice(at, at + 120)}`)
  }
  if (x.headers !== y.headers) throw new Error(`${path}: headers differ:\n  ${a.label}: ${x.headers}\n  ${b.label}: ${y.headers}`)
  compared += 1
  bytes += x.body.length
  console.log(`same: ${x.status} ${path} (${x.body.length} bytes)`)
  return x.body
}

const cursorOf = (body: string): string | null => {
  const parsed: unknown = JSON.parse(body)
  if (typeof parsed !== "object" || parsed === null || !("nextCursor" in parsed)) return null
  return typeof parsed.nextCursor === "string" ? parsed.nextCursor : null
}

const idsOf = (body: string): ReadonlyArray<string> => {
  const parsed: unknown = JSON.parse(body)
  if (typeof parsed !== "object" || parsed === null || !("data" in parsed) || !Array.isArray(parsed.data)) return []
  return parsed.data.flatMap((item: unknown) =>
    typeof item === "object" && item !== null && "id" in item && typeof item.id === "string" ? [item.id] : []
  )
}

/** Follows `nextCursor` from `first` for at most `pages` pages. */
const walk = async (a: Server, b: Server, first: string, pages: number, token?: string) => {
  const separator = first.includes("?") ? "&" : "?"
  let body = await compare(a, b, first, token)
  const ids = [...idsOf(body)]
  for (let page = 1; page < pages; page++) {
    const cursor = cursorOf(body)
    if (cursor === null) break
    body = await compare(a, b, `${first}${separator}cursor=${encodeURIComponent(cursor)}`, token)
    ids.push(...idsOf(body))
  }
  return ids
}

const work = mkdtempSync(join(tmpdir(), "bench-parity-"))
let pg: PgDatabases | undefined
try {
  const other = treeAt(flags.against, work)
  const dataset = () =>
    writeDataset(work, { surveys: Number(flags.surveys), responsesPerSurvey: Number(flags.responses), deepResponses: 600 })
  let here: Server
  let there: Server
  if (flags.database === "postgres") {
    pg = await preparePostgres(join(work, "none.dump"), dataset, (args) => void run(["bun", "src/main.ts", ...args]))
    await pg.copies(["here", "there"])
    here = await start("this tree", root, pg.urlOf("here"))
    there = await start(other.commit, other.tree, pg.urlOf("there"))
  } else {
    const db = join(work, "seed.db")
    for (const file of await dataset()) run(["bun", "src/main.ts", "import", file, "--db", db])
    run(["bun", "src/main.ts", "analytics", "rebuild", "--db", db])
    const copy = (name: string) => {
      const target = join(work, name)
      for (const suffix of databaseFiles) {
        try {
          copyFileSync(db + suffix, target + suffix)
        } catch {
          // a WAL file that is not there
        }
      }
      return target
    }
    here = await start("this tree", root, copy("here.db"))
    there = await start(other.commit, other.tree, copy("there.db"))
  }

  await compare(here, there, "/openapi.json", undefined)
  const surveys = await walk(here, there, "/api/v1/surveys?limit=2", 10)
  await compare(here, there, "/api/v1/surveys")
  await compare(here, there, "/api/v1/surveys?limit=0")
  await compare(here, there, "/api/v1/surveys?cursor=not-a-cursor")
  for (const id of surveys) {
    await compare(here, there, `/api/v1/surveys/${id}`)
    await compare(here, there, `/api/v1/surveys/${id}/questions`)
    await compare(here, there, `/api/v1/surveys/${id}/analytics`)
  }
  const first = surveyId(1)
  const responses = await walk(here, there, `/api/v1/surveys/${first}/responses?limit=100`, 4)
  await walk(here, there, `/api/v1/surveys/${first}/responses?status=completed&limit=50`, 3)
  await walk(here, there, `/api/v1/surveys/${first}/responses?status=partial`, 2)
  await walk(here, there, `/api/v1/surveys/${first}/responses?updatedAfter=2026-01-01T00:01:00.000Z&limit=40`, 3)
  await walk(here, there, `/api/v1/surveys/${first}/responses?createdAfter=2026-01-01T00:02:00.000Z`, 2)
  await walk(here, there, `/api/v1/surveys/${DEEP_SURVEY}/responses?limit=100`, 3, DEEP_TOKEN)
  for (const id of responses.filter((_, i) => i % 37 === 0)) {
    await compare(here, there, `/api/v1/surveys/${first}/responses/${id}`)
  }
  await compare(here, there, `/api/v1/surveys/${first}/responses.csv`)
  await compare(here, there, `/api/v1/surveys/${surveyId(2)}/responses?format=csv&status=completed`)
  await compare(here, there, `/api/v1/surveys/${first}/responses/rsp_unknown`)
  await compare(here, there, `/api/v1/surveys/srv_unknown`)
  await compare(here, there, `/api/v1/surveys/srv_unknown/responses`)
  await compare(here, there, `/api/v1/surveys/${first}/responses?cursor=bm90LWEtY3Vyc29y`)
  await compare(here, there, `/api/v1/surveys/${first}/responses?limit=1000`)
  await compare(here, there, `/api/v1/surveys/${first}/webhook`)
  await compare(here, there, "/api/v1/webhooks")
  await compare(here, there, `/api/v1/surveys/${first}/webhook/deliveries`)
  await compare(here, there, "/api/v1/usage")
  await compare(here, there, "/api/v1/surveys", "sk_unknown_0000000000000000000000")
  console.log(`\n${compared} answers identical (${(bytes / 1024).toFixed(0)} KiB) between this tree and ${other.commit}`)
} catch (error) {
  console.error(error instanceof Error ? error.message : String(error))
  process.exitCode = 1
} finally {
  stopAll()
  pg?.stop()
  rmSync(work, { recursive: true, force: true })
}
