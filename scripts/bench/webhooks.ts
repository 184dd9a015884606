// Webhook delivery benchmark: drain 10,000 queued events, then latency at a steady 100 events/s,
// each beside a baseline measured in the same run: a plain loop of signed fetches to the same
// receiver, with no database, outbox or retry bookkeeping. Run: bun run bench:webhooks
import { SqlClient } from "@effect/sql"
import { BunContext } from "@effect/platform-bun"
import { Duration, Effect, Exit, Layer, Logger, LogLevel, Schedule, Schema, Scope } from "effect"
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { CoreLive, WebhookBackgroundLive } from "../../src/App.js"
import { AppConfig } from "../../src/Config.js"
import { makeId, WorkspaceId } from "../../src/Domain/Ids.js"
import { toIso } from "../../src/Domain/Time.js"
import { defaultEventTypes } from "../../src/Events/Event.js"
import { Outbox } from "../../src/Events/Outbox.js"
import { importFixtureInput } from "../../src/Fixtures/Import.js"
import { DeliverySettings } from "../../src/Webhooks/DeliverySettings.js"
import { Signer } from "../../src/Webhooks/Signer.js"
import { WebhookRepo } from "../../src/Webhooks/WebhookRepo.js"

const DRAIN_EVENTS = 10_000
const RATE_PER_SECOND = 100
const STEADY_SECONDS = 20

const receiverProcess = Effect.acquireRelease(
  Effect.promise(async () => {
    const proc = Bun.spawn(["bun", join(import.meta.dirname, "webhook-receiver.ts")], { stdout: "pipe" })
    const reader = proc.stdout.getReader()
    const first = await reader.read()
    reader.releaseLock()
    const port = Number(new TextDecoder().decode(first.value).trim())
    return { proc, port }
  }),
  ({ proc }) => Effect.promise(async () => {
    proc.kill(9)
    await proc.exited
  })
)

interface Stats {
  readonly count: number
  readonly latencies: ReadonlyArray<number>
}
const stats = (port: number) =>
  Effect.promise(() => fetch(`http://127.0.0.1:${port}/stats`).then((r) => r.json() as Promise<Stats>))
const reset = (port: number) => Effect.promise(() => fetch(`http://127.0.0.1:${port}/reset`).then((r) => r.text()))

const received = (port: number) =>
  Effect.promise(() => fetch(`http://127.0.0.1:${port}/count`).then((r) => r.text()).then(Number))

const waitForCount = (port: number, count: number, limit: Duration.DurationInput) =>
  received(port).pipe(
    Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (n) => n >= count }),
    Effect.timeoutFail({ duration: limit, onTimeout: () => new Error(`receiver did not get ${count} deliveries`) })
  )

const percentile = (values: ReadonlyArray<number>, p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN
}

/** The baseline sender: sign with the same signer, POST with fetch, nothing else. */
const signedFetch = (port: number, secret: string) => {
  const target = `http://127.0.0.1:${port}/hook`
  return (timestamp: number) =>
    Effect.gen(function*() {
      const signer = yield* Signer
      const id = makeId("evt")
      const body = JSON.stringify({ id, type: "response.completed", timestamp: toIso(timestamp), formId: "srv_bench", data: {} })
      const headers = yield* signer.sign({ secret, eventId: id, timestampSeconds: Math.floor(timestamp / 1000), body })
      yield* Effect.promise(() =>
        fetch(target, {
          method: "POST",
          body,
          headers: { ...headers, "content-type": "application/json", "x-service-event-id": id }
        }).then((r) => r.arrayBuffer())
      )
    })
}

const program = Effect.gen(function*() {
  const loadAtStart = loadavg()[0] ?? 0
  const { port } = yield* receiverProcess
  const sql = yield* SqlClient.SqlClient
  const outbox = yield* Outbox
  const webhooks = yield* WebhookRepo
  const signer = yield* Signer
  const secret = yield* signer.newSecret
  const settings = DeliverySettings.defaultValue()
  yield* importFixtureInput({
    accounts: [{ id: "acc_bench", planId: "pro" }],
    workspaces: [{ id: "ws_bench", ownerAccountId: "acc_bench" }],
    surveys: [{ id: "srv_bench", workspaceId: "ws_bench", title: "Bench", status: "published",
      createdAt: "2026-01-01T00:00:00.000Z", updatedAt: "2026-01-01T00:00:00.000Z" }]
  })
  yield* webhooks.put({ workspaceId: WorkspaceId.make("ws_bench"), surveyId: null, targetUrl: `http://127.0.0.1:${port}/hook`, secret,
    events: defaultEventTypes, now: Date.now() })
  const completion = sql.withTransaction(outbox.append({
    type: "response.completed",
    workspaceId: "ws_bench",
    surveyId: "srv_bench",
    data: { responseId: "rsp_bench", externalUserId: null }
  }))
  const startWorker = Effect.gen(function*() {
    const scope = yield* Scope.make()
    yield* Layer.buildWithScope(WebhookBackgroundLive, scope)
    return scope
  })

  // 1. Drain: 10,000 events queued while no worker runs, then one starts.
  for (let i = 0; i < DRAIN_EVENTS; i += 500) {
    yield* sql.withTransaction(Effect.forEach(Array.from({ length: Math.min(500, DRAIN_EVENTS - i) }), () => outbox.append({
      type: "response.completed",
      workspaceId: "ws_bench",
      surveyId: "srv_bench",
      data: { responseId: "rsp_bench", externalUserId: null }
    }), { discard: true }))
  }
  yield* reset(port)
  const drainStart = performance.now()
  const drainScope = yield* startWorker
  yield* waitForCount(port, DRAIN_EVENTS, "5 minutes")
  const drainSeconds = (performance.now() - drainStart) / 1000

  yield* Scope.close(drainScope, Exit.void)
  const delivered = yield* sql`SELECT COUNT(*) AS n FROM deliveries WHERE state = 'delivered'`.pipe(
    Effect.flatMap(Schema.decodeUnknown(Schema.Array(Schema.Struct({ n: Schema.Number }))))
  )

  // Baseline drain: the same number of signed fetches, as many in flight as the worker allows one webhook.
  yield* reset(port)
  const send = signedFetch(port, secret)
  const baselineStart = performance.now()
  yield* Effect.forEach(Array.from({ length: DRAIN_EVENTS }), () => Effect.flatMap(Effect.sync(() => Date.now()), send), {
    concurrency: settings.perWebhook,
    discard: true
  })
  yield* waitForCount(port, DRAIN_EVENTS, "5 minutes")
  const baselineSeconds = (performance.now() - baselineStart) / 1000

  // 2. Latency at a steady rate: completion (outbox commit) to receipt.
  const steadyCount = RATE_PER_SECOND * STEADY_SECONDS
  const every = Duration.millis(1000 / RATE_PER_SECOND)
  yield* reset(port)
  const steadyScope = yield* startWorker
  yield* completion.pipe(Effect.repeat({ schedule: Schedule.fixed(every), times: steadyCount - 1 }))
  yield* waitForCount(port, steadyCount, "1 minute")
  const steady = yield* stats(port)
  yield* Scope.close(steadyScope, Exit.void)

  // Baseline latency: each event sent directly at its time.
  yield* reset(port)
  yield* Effect.flatMap(Effect.sync(() => Date.now()), (t) => Effect.fork(send(t))).pipe(
    Effect.repeat({ schedule: Schedule.fixed(every), times: steadyCount - 1 })
  )
  yield* waitForCount(port, steadyCount, "1 minute")
  const direct = yield* stats(port)

  const rows: Array<readonly [string, string, string]> = [
    [`Drain ${DRAIN_EVENTS.toLocaleString("en")} queued events (deliveries/s)`,
      (DRAIN_EVENTS / drainSeconds).toFixed(0), (DRAIN_EVENTS / baselineSeconds).toFixed(0)],
    ["Drain time (s)", drainSeconds.toFixed(2), baselineSeconds.toFixed(2)],
    [`Latency at ${RATE_PER_SECOND} events/s, p50 (ms)`, String(percentile(steady.latencies, 50)),
      String(percentile(direct.latencies, 50))],
    [`Latency at ${RATE_PER_SECOND} events/s, p99 (ms)`, String(percentile(steady.latencies, 99)),
      String(percentile(direct.latencies, 99))],
    [`Latency at ${RATE_PER_SECOND} events/s, max (ms)`, String(percentile(steady.latencies, 100)),
      String(percentile(direct.latencies, 100))]
  ]
  const table = [
    "| Measure | Delivery worker | Baseline: plain signed fetch loop |",
    "|---|---:|---:|",
    ...rows.map(([name, worker, baseline]) => `| ${name} | ${worker} | ${baseline} |`)
  ].join("\n")
  const notes = [
    `Run ${toIso(Date.now())} on ${navigator.hardwareConcurrency} CPUs (load average ${loadAtStart.toFixed(2)} at the start; ` +
    `the machine is shared, so figures vary between runs), Bun ${Bun.version}; the receiver runs in its own process on 127.0.0.1.`,
    `Worker settings: ${settings.maxConcurrent} attempts in flight, ${settings.perWebhook} per webhook, outbox polled every ` +
    `${Duration.format(settings.pollInterval)}; SQLite file in WAL mode. Deliveries marked delivered after the drain: ${delivered[0]?.n ?? 0}.`,
    `The baseline signs with the same signer and keeps ${settings.perWebhook} fetches in flight (drain), or sends each event ` +
    `at its time (latency); it has no outbox, database or retry bookkeeping. Latency is measured from the event's ` +
    `timestamp (the outbox commit) to its receipt, in whole milliseconds.`
  ].join("\n")
  console.log(table)
  console.log()
  console.log(notes)
  // The sections after the table (from the first `## ` heading) are written by hand and kept.
  const docs = join(import.meta.dirname, "..", "..", "docs", "performance-webhooks.md")
  const previous = existsSync(docs) ? readFileSync(docs, "utf8") : ""
  const kept = previous.indexOf("\n## ") >= 0 ? previous.slice(previous.indexOf("\n## ")) : ""
  writeFileSync(
    docs,
    `# Webhook delivery performance\n\nProduced by \`bun run bench:webhooks\` (scripts/bench/webhooks.ts); the latest run:\n\n${table}\n\n${notes}\n\nTargets: at least 1,000 deliveries/s draining; p99 under 1 s at 100 events/s.\n${kept}`
  )
})

const dir = mkdtempSync(join(tmpdir(), "bench-webhooks-"))
const layer = CoreLive.pipe(
  Layer.provideMerge(AppConfig.layerTest({ databasePath: join(dir, "bench.db"), webhookAllowPrivateTargets: true })),
  Layer.provideMerge(BunContext.layer)
)

program.pipe(
  Effect.scoped,
  Effect.provide(layer),
  Logger.withMinimumLogLevel(LogLevel.Warning),
  Effect.runPromise
).then(() => process.exit(0), (error: unknown) => {
  console.error(error)
  process.exit(1)
})
