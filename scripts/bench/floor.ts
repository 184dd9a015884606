/**
 * `bun run bench:floor`: the per-request floor of the stack, on a constant answer.
 *
 * Three servers answer `GET /things/{id}` with the same constant 60-byte JSON body:
 *   - raw: `Bun.serve` and a `new Response` per request;
 *   - platform: `HttpServer.serve` of `@effect/platform-bun` with an `HttpRouter` route (a fiber
 *     per request, the platform's request and response objects, the tracer off as in the service);
 *   - HttpApi: a one-endpoint `HttpApi` (a Schema path parameter, the declared success encoded by
 *     the framework), served like the service serves its API (tracer off).
 * Each is loaded with wrk on 127.0.0.1 (2 threads, 32 connections) in alternating rounds; the
 * figures are CPU µs per request of the server process and req/s. The service does its work on top
 * of the HttpApi floor; the raw baseline of bench:read on top of the raw floor.
 *
 *   bun scripts/bench/floor.ts [--seconds 4] [--rounds 3] [--no-write]   (writes its table into docs/performance.md)
 *   bun scripts/bench/floor.ts --serve raw|platform|httpapi --port P   (one server, used by the above)
 */
import {
  HttpApi,
  HttpApiBuilder,
  HttpApiEndpoint,
  HttpApiGroup,
  HttpApiSchema,
  HttpMiddleware,
  HttpRouter,
  HttpServer,
  HttpServerResponse
} from "@effect/platform"
import { BunHttpServer, BunRuntime } from "@effect/platform-bun"
import { Effect, FiberRef, Layer, Schema } from "effect"
import { readFileSync, writeFileSync } from "node:fs"
import { cpus, loadavg } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { cpuTime } from "./Processes.js"

const { values: flags } = parseArgs({
  options: {
    serve: { type: "string" },
    port: { type: "string", default: "0" },
    seconds: { type: "string", default: "4" },
    rounds: { type: "string", default: "3" },
    "no-write": { type: "boolean", default: false }
  },
  strict: true
})

const Thing = Schema.Struct({ id: Schema.String, name: Schema.String, count: Schema.Number, active: Schema.Boolean })
const constant = { id: "thing_1", name: "A constant answer", count: 42, active: true }
// A path parameter decoded with Schema, as the service's `/surveys/{id}` is.
const idParam = HttpApiSchema.param("id", Schema.String)

const serve = (mode: string, port: number) => {
  if (mode === "raw") {
    const body = JSON.stringify(constant)
    Bun.serve({
      hostname: "127.0.0.1",
      port,
      fetch: (request) =>
        new URL(request.url).pathname.startsWith("/things/")
          ? new Response(body, { headers: { "content-type": "application/json" } })
          : new Response("not found", { status: 404 })
    })
    return
  }
  const server = BunHttpServer.layer({ hostname: "127.0.0.1", port })
  const quiet = <A, E, R>(layer: Layer.Layer<A, E, R>) =>
    layer.pipe(HttpMiddleware.withTracerDisabledWhen(() => true), Layer.locally(FiberRef.currentTracerEnabled, false))
  if (mode === "platform") {
    const app = HttpRouter.empty.pipe(
      HttpRouter.get("/things/:id", HttpServerResponse.unsafeJson(constant))
    )
    BunRuntime.runMain(Layer.launch(quiet(HttpServer.serve(app)).pipe(Layer.provide(server))))
    return
  }
  class Things extends HttpApiGroup.make("things").add(
    HttpApiEndpoint.get("get")`/things/${idParam}`.addSuccess(Thing)
  ) {}
  const Api = HttpApi.make("floor").add(Things)
  const ThingsLive = HttpApiBuilder.group(Api, "things", (handlers) => handlers.handle("get", () => Effect.succeed(constant)))
  const ApiLive = HttpApiBuilder.api(Api).pipe(Layer.provide(ThingsLive))
  BunRuntime.runMain(
    Layer.launch(quiet(HttpApiBuilder.serve()).pipe(Layer.provide(ApiLive), Layer.provide(server)))
  )
}



const wrk = (port: number, pid: number, seconds: number) => {
  const before = cpuTime(pid)
  const result = Bun.spawnSync(
    ["/usr/bin/wrk", "-t2", "-c32", `-d${seconds}s`, `http://127.0.0.1:${port}/things/thing_1`],
    { stdout: "pipe", stderr: "pipe" }
  )
  const out = result.stdout.toString()
  const requests = Number(/(\d+) requests in/.exec(out)?.[1])
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1])
  return { rps, cpuUs: (cpuTime(pid) - before) / requests }
}

const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[mid] ?? Number.NaN : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2
}

/** The 1-minute load average: the machine may be shared. */
const load = () => loadavg()[0]?.toFixed(1) ?? "?"

const orchestrate = async () => {
  const loadAtStart = load()
  const seconds = Number(flags.seconds)
  const rounds = Number(flags.rounds)
  const modes = ["raw", "platform", "httpapi"] as const
  const servers = modes.map((mode, i) => {
    const port = 19500 + i + Math.floor(Math.random() * 400)
    const child = Bun.spawn(["bun", import.meta.path, "--serve", mode, "--port", String(port)], {
      stdout: "ignore",
      stderr: "inherit"
    })
    return { mode, port, child }
  })
  try {
    for (const s of servers) {
      for (let i = 0; i < 100; i++) {
        const ok = await fetch(`http://127.0.0.1:${s.port}/things/thing_1`).then((r) => r.ok, () => false)
        if (ok) break
        await Bun.sleep(100)
      }
      const body = await (await fetch(`http://127.0.0.1:${s.port}/things/thing_1`)).text()
      if (body !== JSON.stringify(constant)) throw new Error(`${s.mode} answered ${body}`)
      wrk(s.port, s.child.pid, 1)
    }
    const loads = new Map(modes.map((m) => [m, [] as Array<{ rps: number; cpuUs: number }>]))
    for (let round = 0; round < rounds; round++) {
      for (const s of servers) loads.get(s.mode)?.push(wrk(s.port, s.child.pid, seconds))
    }
    const rows = servers.map((s) => {
      const l = loads.get(s.mode) ?? []
      return { mode: s.mode, rps: median(l.map((x) => x.rps)), cpuUs: median(l.map((x) => x.cpuUs)) }
    })
    const raw = rows[0]
    const lines = [
      `Measured ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC on ${cpus().length} cores, ` +
      `Bun ${Bun.version}; wrk 2 threads, 32 connections, ${rounds} rounds of ${seconds} s, medians; ` +
      `a machine shared with other work (load average ${loadAtStart} at the start, ${load()} at the end).`,
      "",
      "| server (constant 60-byte JSON answer) | req/s | CPU µs/req | CPU × raw |",
      "|---|---:|---:|---:|",
      ...rows.map((r) =>
        `| ${r.mode} | ${r.rps.toFixed(0)} | ${r.cpuUs.toFixed(0)} | ${(r.cpuUs / (raw?.cpuUs ?? 1)).toFixed(1)} |`
      )
    ]
    console.log(lines.join("\n"))
    if (!flags["no-write"]) {
      const doc = join(import.meta.dir, "..", "..", "docs", "performance.md")
      const begin = "<!-- bench:floor:begin -->"
      const end = "<!-- bench:floor:end -->"
      const current = readFileSync(doc, "utf8")
      const from = current.indexOf(begin)
      const to = current.indexOf(end)
      if (from >= 0 && to > from) {
        writeFileSync(doc, current.slice(0, from) + `${begin}\n${lines.join("\n")}\n${end}` + current.slice(to + end.length))
      }
    }
  } finally {
    for (const s of servers) s.child.kill()
  }
}

if (flags.serve !== undefined) serve(flags.serve, Number(flags.port))
else await orchestrate()
