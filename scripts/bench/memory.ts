/**
 * `bun run bench:memory`: where the compiled binary's memory goes under the read load, side by side
 * with the raw baseline (scripts/bench/baseline.ts) in one run.
 *
 * It serves the dataset bench:read caches in `.bench/` (run `bun run bench:read` once first). Each
 * server gets its own copy of the file. For each server it reports
 *
 * - idle: RSS one second after the first answered request, split into anonymous memory (the
 *   JavaScript heap, malloc, SQLite's page caches) and file pages (the executable's code and data
 *   that were touched);
 * - per endpoint of bench:read: the peak RSS while wrk loads it (VmHWM, reset before each endpoint,
 *   as bench:read does) and the largest anonymous part seen by sampling /proc/PID/status;
 * - after: RSS two seconds after the last load (what the process keeps).
 *
 * Flags: --seconds N (load per endpoint and server, 5), --connections N (32), --no-build,
 * --project NAME=PATH (repeatable: several binaries side by side, each against the same baseline;
 * default `binary=dist/survey-service`), --only TEXT (endpoints whose name contains TEXT).
 *
 * It prints figures and never fails on them: the machine is shared and noisy.
 */
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { cpus, loadavg } from "node:os"
import { join, resolve } from "node:path"
import { parseArgs } from "node:util"
import { BENCH_TOKEN, DEEP_SURVEY, DEEP_TOKEN, surveyId } from "./Dataset.js"
import { cpuTime, freePort, requireWrk, sleep, spawnedProcesses } from "./Processes.js"

const { values: flags } = parseArgs({
  options: {
    seconds: { type: "string", default: "5" },
    connections: { type: "string", default: "32" },
    "no-build": { type: "boolean", default: false },
    project: { type: "string", multiple: true },
    only: { type: "string" }
  },
  strict: true
})

const root = join(import.meta.dir, "..", "..")
const seconds = Number(flags.seconds)
const connections = Number(flags.connections)

/** The endpoints of bench:read, in its order. */
const endpoints: ReadonlyArray<{ readonly name: string; readonly path: string; readonly token: string }> = [
  { name: "GET /surveys/{id}", path: `/api/v1/surveys/${surveyId(1)}`, token: BENCH_TOKEN },
  { name: "GET /surveys?limit=25", path: "/api/v1/surveys?limit=25", token: BENCH_TOKEN },
  { name: "GET /surveys/{id}/questions", path: `/api/v1/surveys/${surveyId(1)}/questions`, token: BENCH_TOKEN },
  {
    name: "GET /surveys/{id}/responses?limit=100",
    path: `/api/v1/surveys/${surveyId(1)}/responses?limit=100`,
    token: BENCH_TOKEN
  },
  { name: "GET /surveys/{id}/analytics", path: `/api/v1/surveys/${surveyId(1)}/analytics`, token: BENCH_TOKEN },
  { name: "GET /usage", path: "/api/v1/usage", token: BENCH_TOKEN },
  { name: "responses page 1", path: `/api/v1/surveys/${DEEP_SURVEY}/responses?limit=25`, token: DEEP_TOKEN }
]

const projects = (flags.project ?? ["binary=dist/survey-service"]).map((spec) => {
  const at = spec.indexOf("=")
  if (at <= 0) throw new Error(`--project takes NAME=PATH, not ${spec}`)
  return { name: spec.slice(0, at), path: resolve(root, spec.slice(at + 1)) }
})

requireWrk("bench:memory")

const { children, stopAll } = spawnedProcesses()



/** RSS figures of a process in MB, from /proc/PID/status. */
const memory = (pid: number) => {
  const text = readFileSync(`/proc/${pid}/status`, "utf8")
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, "m").exec(text)?.[1] ?? Number.NaN) / 1024
  return { rss: field("VmRSS"), anon: field("RssAnon"), file: field("RssFile"), hwm: field("VmHWM") }
}

const resetPeak = (pid: number) => writeFileSync(`/proc/${pid}/clear_refs`, "5")


interface Server {
  readonly name: string
  readonly port: number
  readonly pid: number
}

const start = async (name: string, cmd: Array<string>, port: number): Promise<Server> => {
  const child = Bun.spawn(cmd, { cwd: root, stdout: "ignore", stderr: "inherit", env: { ...process.env, LOG_FORMAT: "json" } })
  children.add(child)
  const deadline = performance.now() + 30_000
  while (performance.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${name} exited before answering`)
    try {
      const res = await fetch(`http://127.0.0.1:${port}${endpoints[0]!.path}`, {
        headers: { authorization: `Bearer ${BENCH_TOKEN}` }
      })
      await res.arrayBuffer()
      if (res.status === 200) return { name, port, pid: child.pid }
    } catch {
      // not listening yet
    }
    await sleep(5)
  }
  throw new Error(`${name} did not answer within 30 s`)
}

/** wrk on one endpoint while the server's memory is sampled every 20 ms; answers the peaks in MB. */
const load = async (server: Server, e: (typeof endpoints)[number], duration: number) => {
  resetPeak(server.pid)
  let anon = 0
  const sample = () => {
    anon = Math.max(anon, memory(server.pid).anon)
  }
  const cpuBefore = cpuTime(server.pid)
  const timer = setInterval(sample, 20)
  const wrk = Bun.spawn([
    "/usr/bin/wrk",
    "-t2",
    `-c${connections}`,
    `-d${duration}s`,
    "-H",
    `Authorization: Bearer ${e.token}`,
    `http://127.0.0.1:${server.port}${e.path}`
  ], { stdout: "pipe", stderr: "pipe" })
  const out = await new Response(wrk.stdout).text()
  await wrk.exited
  clearInterval(timer)
  sample()
  const cpu = cpuTime(server.pid) - cpuBefore
  const requests = Number(/(\d+) requests in/.exec(out)?.[1])
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1])
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0)
  return { peak: memory(server.pid).hwm, anon, rps, cpuUs: cpu / requests, non2xx }
}

const latestDataset = () => {
  const dir = join(root, ".bench")
  const files = existsSync(dir)
    ? readdirSync(dir).filter((f) => /^read-50x2000-[0-9a-f]+\.db$/.test(f)).map((f) => join(dir, f))
    : []
  const newest = files.sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0]
  if (newest === undefined) throw new Error("no bench:read dataset in .bench/: run `bun run bench:read` once first")
  return newest
}

const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits })
const load1 = () => fmt(loadavg()[0]!, 1)

const main = async () => {
  if (!flags["no-build"]) {
    console.log("building the binary (bun run build)")
    const built = Bun.spawnSync(["bun", "run", "build"], { cwd: root, stdout: "pipe", stderr: "pipe" })
    if (built.exitCode !== 0) throw new Error(`bun run build failed:\n${built.stderr.toString()}`)
  }
  const db = latestDataset()
  const work = mkdtempSync(join(root, ".bench", "memory-"))
  process.on("exit", () => rmSync(work, { recursive: true, force: true }))
  /** A copy of the dataset for one server, migrated by `binary` (which adds the request quota's file beside it). */
  const copy = (name: string, binary: string) => {
    const target = join(work, `${name}.db`)
    copyFileSync(db, target)
    const migrated = Bun.spawnSync([binary, "migrate", "--db", target], { cwd: root, stdout: "pipe", stderr: "pipe" })
    if (migrated.exitCode !== 0) throw new Error(`${binary} migrate failed:\n${migrated.stderr.toString()}`)
    return target
  }
  const loads: Array<string> = [`load average at start ${load1()}`]

  const servers: Array<Server> = []
  for (const p of projects) {
    const port = freePort()
    servers.push(await start(p.name, [p.path, "serve", "--port", String(port), "--db", copy(p.name, p.path)], port))
  }
  const basePort = freePort()
  servers.push(
    await start("baseline", ["bun", join(import.meta.dir, "baseline.ts"), "--port", String(basePort), "--db", copy("baseline", projects[0]!.path)], basePort)
  )
  await sleep(1000)
  const idle = new Map(servers.map((s) => [s.name, memory(s.pid)]))

  const selected = endpoints.filter((e) => flags.only === undefined || e.name.includes(flags.only))
  const rows: Array<{ endpoint: string; figures: Map<string, Awaited<ReturnType<typeof load>>> }> = []
  for (const e of selected) {
    for (const s of servers) await load(s, e, 1)
    const figures = new Map<string, Awaited<ReturnType<typeof load>>>()
    for (const s of servers) figures.set(s.name, await load(s, e, seconds))
    rows.push({ endpoint: e.name, figures })
    console.log(
      `${e.name}: ${servers.map((s) => `${s.name} ${fmt(figures.get(s.name)!.peak)} MB, ${fmt(figures.get(s.name)!.rps)} req/s`).join("; ")}`
    )
    loads.push(`${e.name} ${load1()}`)
  }
  await sleep(2000)
  const after = new Map(servers.map((s) => [s.name, memory(s.pid)]))
  stopAll()

  const names = servers.map((s) => s.name)
  const baseline = "baseline"
  const lines = [
    `Measured ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC on ${cpus().length} cores, Bun ${Bun.version}; ` +
    `wrk 2 threads, ${connections} connections, ${seconds} s per endpoint and server after a 1 s warm-up; one server loaded at a time. ` +
    `Load average (1 min): ${loads.join(", ")}.`,
    "",
    "| | " + names.join(" | ") + " |",
    "|---|" + names.map(() => "---:").join("|") + "|",
    `| idle RSS MB (anonymous + file) | ${
      names.map((n) => {
        const m = idle.get(n)!
        return `${fmt(m.rss)} (${fmt(m.anon)} + ${fmt(m.file)})`
      }).join(" | ")
    } |`,
    ...rows.map((r) =>
      `| ${r.endpoint}: peak RSS MB (anonymous); req/s, CPU µs/req | ${
        names.map((n) => {
          const f = r.figures.get(n)!
          const ratio = n === baseline ? "" : ` ${fmt(f.peak / r.figures.get(baseline)!.peak, 2)}×`
          return `${fmt(f.peak)}${ratio} (${fmt(f.anon)}); ${fmt(f.rps)}, ${fmt(f.cpuUs)}${f.non2xx > 0 ? ` [${f.non2xx} non-2xx]` : ""}`
        }).join(" | ")
      } |`
    ),
    `| highest peak RSS MB | ${
      names.map((n) => {
        const top = Math.max(...rows.map((r) => r.figures.get(n)!.peak))
        const base = Math.max(...rows.map((r) => r.figures.get(baseline)!.peak))
        return `${fmt(top)}${n === baseline ? "" : ` ${fmt(top / base, 2)}×`}`
      }).join(" | ")
    } |`,
    `| RSS 2 s after the load MB (anonymous + file) | ${
      names.map((n) => {
        const m = after.get(n)!
        return `${fmt(m.rss)} (${fmt(m.anon)} + ${fmt(m.file)})`
      }).join(" | ")
    } |`
  ]
  console.log(`\n${lines.join("\n")}`)
}

await main().finally(stopAll)
