/**
 * Throughput of a cheap endpoint (GET /api/v1/surveys/{id}) with the quota limiter and without it,
 * side by side in one run: the same server, database and key; only the RateLimiter layer differs.
 * Rounds alternate (without, with, without, with, ...) so that drift on a shared machine hits both.
 *
 *   bun run bench:quota [-- --rounds 3 --seconds 5 --connections 32]
 */
import { WorkspaceId } from "../../src/Domain/Ids.js"
import { HttpServer } from "@effect/platform"
import { BunHttpServer } from "@effect/platform-bun"
import { Effect, Layer, LogLevel, ManagedRuntime } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import type { FixtureInput } from "../../src/Fixtures/Fixture.js"
import { makeServe } from "../../src/App.js"
import { RateLimiter } from "../../src/Quota/RateLimiter.js"
import { KeyAdmission } from "../../src/Auth/Authorization.js"
import { TestDatabase } from "../../test/support/TestServer.js"

const { values: args } = parseArgs({
  options: {
    rounds: { type: "string", default: "3" },
    seconds: { type: "string", default: "5" },
    connections: { type: "string", default: "32" }
  }
})
const rounds = Math.min(10, Math.max(1, Number(args.rounds)))
const seconds = Math.min(60, Math.max(1, Number(args.seconds)))
const connections = Math.min(256, Math.max(1, Number(args.connections)))

const TOKEN = "sk_bench_quota_aaaaaaaaaaaaaaaaa"
// Limits far above what the run can spend, so every request is counted and none is refused.
const plan = { burstLimit: 1_000_000_000, burstWindowMinutes: 1, dailyLimit: 1_000_000_000, monthlyLimit: 1_000_000_000 }
const fixture: FixtureInput = {
  plans: [{ id: "bench", apiAccess: true, ...plan }],
  accounts: [{ id: "acc_bench", planId: "bench" }],
  workspaces: [{ id: "ws_bench", ownerAccountId: "acc_bench" }],
  members: [{ workspaceId: "ws_bench", accountId: "acc_bench", role: "owner" }],
  apiKeys: [{ token: TOKEN, workspaceId: "ws_bench", createdBy: "acc_bench", surveyIds: null, revoked: false }],
  surveys: [{
    id: "srv_bench",
    workspaceId: "ws_bench",
    title: "Bench",
    status: "published",
    createdAt: "2026-01-01T00:00:00.000Z",
    updatedAt: "2026-01-01T00:00:00.000Z"
  }]
}

/** The baseline: the same middleware and handlers with a limiter that admits without counting. */
const NoLimiter = Layer.mergeAll(
  Layer.succeed(
    RateLimiter,
    RateLimiter.of({
      admit: () => Effect.void,
      usage: () => Effect.dieMessage("the baseline does not report usage"),
      usedToday: () => Effect.dieMessage("the baseline does not report usage")
    })
  ),
  Layer.succeed(KeyAdmission, KeyAdmission.of({ admit: () => Effect.void }))
)

interface Run {
  readonly variant: "without limiter" | "with limiter"
  readonly requestsPerSecond: number
  readonly p50: string
  readonly p99: string
  readonly non2xx: number
  readonly requests: number
  /** Server CPU time (this process) per answered request, in microseconds. */
  readonly cpuMicros: number
}

const wrk = async (url: string): Promise<Omit<Run, "variant">> => {
  const cpuBefore = process.cpuUsage()
  const child = Bun.spawn([
    "/usr/bin/wrk",
    "-t1",
    `-c${connections}`,
    `-d${seconds}s`,
    "--latency",
    "-H",
    `Authorization: Bearer ${TOKEN}`,
    url
  ], { stdout: "pipe", stderr: "pipe" })
  const out = await new Response(child.stdout).text()
  await child.exited
  const cpu = process.cpuUsage(cpuBefore)
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? "0")
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]
  if (rps === undefined) throw new Error(`wrk printed no throughput:\n${out}`)
  return {
    requestsPerSecond: Number(rps),
    p50: /\s50%\s+(\S+)/.exec(out)?.[1] ?? "?",
    p99: /\s99%\s+(\S+)/.exec(out)?.[1] ?? "?",
    non2xx: Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? "0"),
    requests,
    cpuMicros: requests > 0 ? (cpu.user + cpu.system) / requests : 0
  }
}

const serve = async (variant: Run["variant"], databasePath: string) => {
  // The production serve graph without background work; the baseline overrides the limiter.
  const layer = makeServe({ background: Layer.empty, ...(variant === "with limiter" ? {} : { quota: NoLimiter }) }).pipe(
    Layer.provideMerge(BunHttpServer.layer({ port: 0, hostname: "127.0.0.1" })),
    Layer.provide(TestDatabase(fixture, { databasePath, logLevel: LogLevel.Warning }))
  )
  const runtime = ManagedRuntime.make(layer)
  const server = await runtime.runPromise(HttpServer.HttpServer)
  if (server.address._tag !== "TcpAddress") throw new Error("expected a TCP address")
  return { runtime, url: `http://127.0.0.1:${server.address.port}/api/v1/surveys/srv_bench` }
}

/** The limiter alone, in process: mean cost of one admitted request, store writes included. */
const admitMicros = async (databasePath: string) => {
  const key = {
    keyId: "key_bench",
    workspaceId: WorkspaceId.make("ws_bench"),
    accountId: "acc_bench",
    role: "owner" as const,
    surveyIds: null,
    quota: { planId: "bench", ...plan }
  }
  const count = 50_000
  const program = Effect.gen(function*() {
    const limiter = yield* RateLimiter
    yield* limiter.admit(key)
    const started = performance.now()
    const cpu = process.cpuUsage()
    yield* Effect.forEach(Array.from({ length: count }), () => limiter.admit(key), { concurrency: 32, discard: true })
    const spent = process.cpuUsage(cpu)
    return { wall: ((performance.now() - started) * 1000) / count, cpu: (spent.user + spent.system) / count }
  })
  return Effect.runPromise(
    program.pipe(
      Effect.provide(RateLimiter.layer.pipe(Layer.provide(TestDatabase(undefined, { databasePath })))),
      Effect.scoped
    )
  )
}

const work = mkdtempSync(join(tmpdir(), "bench-quota-"))
const runs: Array<Run> = []
let limiterAlone = { wall: 0, cpu: 0 }
try {
  for (let round = 0; round < rounds; round++) {
    for (const variant of ["without limiter", "with limiter"] as const) {
      const { runtime, url } = await serve(variant, join(work, `${round}-${variant.replace(/ /g, "-")}.db`))
      try {
        const warm = await fetch(url, { headers: { authorization: `Bearer ${TOKEN}` } })
        if (warm.status !== 200) throw new Error(`${variant}: warm-up answered ${warm.status}`)
        await wrk(url) // warm-up round, not kept
        const result = await wrk(url)
        runs.push({ variant, ...result })
        console.error(
          `round ${round + 1} ${variant}: ${result.requestsPerSecond.toFixed(0)} req/s, ` +
            `${result.cpuMicros.toFixed(0)} µs CPU/request`
        )
      } finally {
        await runtime.dispose()
      }
    }
  }
  limiterAlone = await admitMicros(join(work, "admit.db"))
} finally {
  rmSync(work, { recursive: true, force: true })
}

const median = (xs: ReadonlyArray<number>) => {
  const sorted = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid] ?? 0 : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2
}
const medianOf = (variant: Run["variant"], pick: (run: Run) => number) =>
  median(runs.filter((r) => r.variant === variant).map(pick))
const without = medianOf("without limiter", (r) => r.requestsPerSecond)
const withLimiter = medianOf("with limiter", (r) => r.requestsPerSecond)
const cost = (1 - withLimiter / without) * 100
const cpuWithout = medianOf("without limiter", (r) => r.cpuMicros)
const cpuWith = medianOf("with limiter", (r) => r.cpuMicros)
const cpuCost = (cpuWith / cpuWithout - 1) * 100

const lines = [
  `GET /api/v1/surveys/{id}, wrk -t1 -c${connections} -d${seconds}s on 127.0.0.1, ${rounds} alternating rounds, ` +
  `Bun ${Bun.version}, ${navigator.hardwareConcurrency} cores, ${new Date().toISOString().slice(0, 10)}`,
  "",
  "| round | variant | req/s | server CPU µs/request | p50 | p99 | non-2xx |",
  "|---|---|---|---|---|---|---|",
  ...runs.map((r, i) =>
    `| ${Math.floor(i / 2) + 1} | ${r.variant} | ${r.requestsPerSecond.toFixed(0)} | ${r.cpuMicros.toFixed(0)} | ` +
    `${r.p50} | ${r.p99} | ${r.non2xx} |`
  ),
  "",
  `Median throughput without limiter: ${without.toFixed(0)} req/s; with limiter: ${withLimiter.toFixed(0)} req/s; ` +
  `cost ${cost.toFixed(1)}% (target at most 10%).`,
  `Median server CPU per request without limiter: ${cpuWithout.toFixed(0)} µs; with limiter: ${cpuWith.toFixed(0)} µs; ` +
  `cost ${cpuCost.toFixed(1)}%.`,
  `The limiter alone (in process, 50,000 admissions, 32 at a time, writes included): ` +
  `${limiterAlone.wall.toFixed(1)} µs per request of wall-clock time (mostly waiting for event-loop turns), ` +
  `${limiterAlone.cpu.toFixed(1)} µs of CPU.`
]
console.log(lines.join("\n"))
if (runs.some((r) => r.non2xx > 0)) {
  console.log("Some answers were not 2xx: the figures are not comparable.")
  process.exitCode = 1
}
