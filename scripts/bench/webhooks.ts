// Webhook delivery benchmark: drain 10,000 queued events, then latency at a steady 100 events/s,
// each beside a baseline measured in the same run: a plain loop of signed fetches to the same
// receiver, with no database, outbox or retry bookkeeping. Run: bun run bench:webhooks
// `--database postgres` measures the worker on SQLite and on PostgreSQL (a throwaway cluster) in
// one run, each with 30 days of history loaded before the drain (200,000 delivered deliveries
// with their events and attempts; on PostgreSQL never analyzed), side by side.
import { SqlClient } from "@effect/sql"
import { BunContext } from "@effect/platform-bun"
import { Duration, Effect, Exit, Layer, Logger, LogLevel, Redacted, Schedule, Schema, Scope } from "effect"
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { CoreLive } from "../../src/App.js"
import { WebhookBackgroundLive } from "../../test/support/WebhookBackground.js"
import { AppConfig } from "../../src/Config.js"
import { makeId, WorkspaceId } from "../../src/Domain/Ids.js"
import { toIso } from "../../src/Domain/Time.js"
import { defaultEventTypes } from "../../src/Domain/Event.js"
import { OutboxRepo } from "../../src/Events/OutboxRepo.js"
import { importFixtureInput } from "../../src/Fixtures/Import.js"
import { DeliverySettings } from "../../src/Webhooks/DeliverySettings.js"
import { Signer } from "../../src/Webhooks/Signer.js"
import { WebhookRepo } from "../../src/Webhooks/WebhookRepo.js"
import { startPostgres } from "../../test/support/PostgresCluster.js"

const DRAIN_EVENTS = 10_000
const RATE_PER_SECOND = 100
const STEADY_SECONDS = 20
const HISTORY_DELIVERIES = 200_000
const DAY = 86_400_000

const { values: args } = parseArgs({ options: { database: { type: "string", default: "sqlite" } } })
if (args.database !== "sqlite" && args.database !== "postgres") {
  console.error("--database takes sqlite (the default) or postgres (SQLite and PostgreSQL side by side)")
  process.exit(2)
}
const withPostgres = args.database === "postgres"

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
      const headers = yield* signer.sign({ secrets: [secret], eventId: id, timestampSeconds: Math.floor(timestamp / 1000), body })
      yield* Effect.promise(() =>
        fetch(target, {
          method: "POST",
          body,
          headers: { ...headers, "content-type": "application/json", "x-service-event-id": id }
        }).then((r) => r.arrayBuffer())
      )
    })
}

/** An epoch-milliseconds expression as the service's ISO 8601 text, in either database's words. */
const isoOf = (sql: SqlClient.SqlClient, millis: string) =>
  sql.onDialectOrElse({
    pg: () => sql.unsafe(`to_char(to_timestamp((${millis}) / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`),
    orElse: () => sql.unsafe(`strftime('%Y-%m-%dT%H:%M:%fZ', (${millis}) / 1000.0, 'unixepoch')`)
  })

/**
 * Thirty days of delivered history for the bench webhook, as a busy workspace has it: one
 * statement per table, the outbox cursor past it. On PostgreSQL autovacuum is kept off these
 * tables, so that the drain runs on tables nothing has analyzed since they were small.
 */
const loadHistory = (now: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql.onDialectOrElse({
      pg: () =>
        Effect.forEach(
          ["events", "deliveries", "delivery_attempts"],
          (table) => sql.unsafe(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`),
          { discard: true }
        ),
      orElse: () => Effect.void
    })
    // Inside the 30 days, so that the purges the worker runs at its start keep all of it.
    const start = now - 29 * DAY
    const step = Math.floor((28 * DAY) / HISTORY_DELIVERIES)
    const at = `CAST(${start} AS BIGINT) + CAST(n.i AS BIGINT) * ${step}`
    yield* sql`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${HISTORY_DELIVERIES})
      INSERT INTO events (id, type, workspace_id, survey_id, payload, created_at)
      SELECT 'evt_history_' || n.i, 'response.completed', 'ws_bench', 'srv_bench', '{"data":{}}', ${isoOf(sql, at)} FROM n`
    yield* sql`INSERT INTO deliveries (event_seq, event_id, webhook_id, state, attempts, next_attempt_at, lease_until, created_at)
      SELECT e.seq, e.id, w.id, 'delivered', 1, CAST(${start} AS BIGINT) + e.seq * ${step}, 0, CAST(${start} AS BIGINT) + e.seq * ${step}
      FROM events e JOIN webhooks w ON w.workspace_id = 'ws_bench' WHERE e.id LIKE 'evt_history_%'`
    yield* sql`INSERT INTO delivery_attempts (id, delivery_id, scope, workspace_id, survey_id, event_id, event_type, ok, response_status, error, attempted_at)
      SELECT 'att_history_' || id, id, 'workspace', 'ws_bench', NULL, event_id, 'response.completed', 1, 200, NULL, next_attempt_at
      FROM deliveries`
    yield* sql`UPDATE outbox_cursors SET last_seq = (SELECT MAX(seq) FROM events) WHERE name = 'webhooks'`
  })

interface Measured {
  readonly drainSeconds: number
  readonly delivered: number
  readonly steady: Stats
}

/** The delivery worker on the database of the layer it runs in: the drain, then latency at a steady rate. */
const measureWorker = (port: number, secret: string, history: boolean) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const outbox = yield* OutboxRepo
    const webhooks = yield* WebhookRepo
    yield* importFixtureInput({
      accounts: [{ id: "acc_bench", planId: "pro" }],
      workspaces: [{ id: "ws_bench", ownerAccountId: "acc_bench" }],
      surveys: [{ id: "srv_bench", workspaceId: "ws_bench", title: "Bench", status: "published",
        createdAt: "2026-01-01T00:00:00.000Z", updatedAt: "2026-01-01T00:00:00.000Z" }]
    })
    yield* sql.withTransaction(Effect.gen(function*() {
      const id = yield* webhooks.insert({ scope: { workspaceId: WorkspaceId.make("ws_bench"), surveyId: null },
        targetUrl: `http://127.0.0.1:${port}/hook`, secret, maxAttemptsPerSecond: null, now: Date.now() })
      yield* webhooks.setEventTypes(id, defaultEventTypes)
    }))
    if (history) yield* loadHistory(Date.now())
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
    // The last attempts' outcomes are written after their receipt: stopping the worker before would
    // leave them to be sent again in the latency run, and counted there.
    const countDelivered = sql`SELECT COUNT(*) AS n FROM deliveries WHERE state = 'delivered'`.pipe(
      Effect.flatMap(Schema.decodeUnknown(Schema.Array(Schema.Struct({ n: Schema.Number })))),
      Effect.map((rows) => (rows[0]?.n ?? 0) - (history ? HISTORY_DELIVERIES : 0))
    )
    yield* countDelivered.pipe(
      Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (n) => n >= DRAIN_EVENTS }),
      Effect.timeout("1 minute"),
      Effect.ignore
    )
    const delivered = yield* countDelivered
    yield* Scope.close(drainScope, Exit.void)

    // 2. Latency at a steady rate: completion (outbox commit) to receipt.
    const steadyCount = RATE_PER_SECOND * STEADY_SECONDS
    yield* reset(port)
    const steadyScope = yield* startWorker
    yield* completion.pipe(Effect.repeat({ schedule: Schedule.fixed(Duration.millis(1000 / RATE_PER_SECOND)), times: steadyCount - 1 }))
    yield* waitForCount(port, steadyCount, "1 minute")
    const steady = yield* stats(port)
    yield* Scope.close(steadyScope, Exit.void)
    return { drainSeconds, delivered, steady } satisfies Measured
  })

/** The service's core over one database: a SQLite file in `dir`, or the PostgreSQL database at `url`. */
const coreOn = (database: { readonly databasePath: string } | { readonly databaseUrl: string }) =>
  CoreLive.pipe(
    Layer.provideMerge(AppConfig.layerTest({
      ...("databaseUrl" in database
        ? { databaseUrl: Redacted.make(database.databaseUrl) }
        : { databasePath: database.databasePath }),
      webhookAllowPrivateTargets: true
    })),
    Layer.provideMerge(BunContext.layer)
  )

const postgresCluster = Effect.acquireRelease(Effect.promise(() => startPostgres()), (cluster) => Effect.sync(() => cluster.stop()))

const program = Effect.gen(function*() {
  const loadAtStart = loadavg()[0] ?? 0
  const { port } = yield* receiverProcess
  const signer = yield* Signer
  const secret = yield* signer.newSecret
  const settings = DeliverySettings.defaultValue()

  const cells: Array<readonly [string, Measured]> = []
  cells.push([
    "SQLite",
    yield* measureWorker(port, secret, withPostgres).pipe(
      Effect.provide(coreOn({ databasePath: join(mkdtempSync(join(tmpdir(), "bench-webhooks-")), "bench.db") })),
      Effect.scoped
    )
  ])
  if (withPostgres) {
    const cluster = yield* postgresCluster
    cells.push([
      "PostgreSQL",
      yield* measureWorker(port, secret, true).pipe(
        Effect.provide(coreOn({ databaseUrl: `${cluster.base}/postgres` })),
        Effect.scoped
      )
    ])
  }
  const loadAfterWorker = loadavg()[0] ?? 0

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

  // Baseline latency: each event sent directly at its time.
  const steadyCount = RATE_PER_SECOND * STEADY_SECONDS
  const every = Duration.millis(1000 / RATE_PER_SECOND)
  yield* reset(port)
  yield* Effect.flatMap(Effect.sync(() => Date.now()), (t) => Effect.fork(send(t))).pipe(
    Effect.repeat({ schedule: Schedule.fixed(every), times: steadyCount - 1 })
  )
  yield* waitForCount(port, steadyCount, "1 minute")
  const direct = yield* stats(port)

  const latency = (p: number) => [
    `Latency at ${RATE_PER_SECOND} events/s, ${p === 100 ? "max" : `p${p}`} (ms)`,
    ...cells.map(([, m]) => String(percentile(m.steady.latencies, p))),
    String(percentile(direct.latencies, p))
  ]
  const rows: Array<ReadonlyArray<string>> = [
    [`Drain ${DRAIN_EVENTS.toLocaleString("en")} queued events (deliveries/s)`,
      ...cells.map(([, m]) => (DRAIN_EVENTS / m.drainSeconds).toFixed(0)), (DRAIN_EVENTS / baselineSeconds).toFixed(0)],
    ["Drain time (s)", ...cells.map(([, m]) => m.drainSeconds.toFixed(2)), baselineSeconds.toFixed(2)],
    latency(50),
    latency(99),
    latency(100)
  ]
  const workerColumns = cells.length === 1 ? ["Delivery worker"] : cells.map(([name]) => `Delivery worker, ${name}`)
  const table = [
    `| Measure | ${workerColumns.join(" | ")} | Baseline: plain signed fetch loop |`,
    `|---|${cells.map(() => "---:|").join("")}---:|`,
    ...rows.map((row) => `| ${row.join(" | ")} |`)
  ].join("\n")
  const notes = [
    `Run ${toIso(Date.now())} on ${navigator.hardwareConcurrency} CPUs (load average ${loadAtStart.toFixed(2)} at the start, ` +
    `${loadAfterWorker.toFixed(2)} after the worker's runs; the machine is shared, so figures vary between runs), Bun ${Bun.version}; ` +
    `the receiver runs in its own process on 127.0.0.1.`,
    `Worker settings: ${settings.maxConcurrent} attempts in flight, ${settings.perWebhook} per webhook, outbox polled every ` +
    `${Duration.format(settings.pollInterval)}; SQLite file in WAL mode` +
    (withPostgres ? "; PostgreSQL 15, a throwaway cluster on 127.0.0.1, one process" : "") +
    `. Deliveries of the drain marked delivered after it: ${cells.map(([name, m]) => `${m.delivered} (${name})`).join(", ")}.`,
    ...(withPostgres
      ? [`History before the drain, on both databases: ${HISTORY_DELIVERIES.toLocaleString("en")} delivered deliveries of the same ` +
        `webhook over 30 days, with their events and attempts; on PostgreSQL never analyzed (autovacuum off on those tables).`]
      : []),
    `The baseline signs with the same signer and keeps ${settings.perWebhook} fetches in flight (drain), or sends each event ` +
    `at its time (latency); it has no outbox, database or retry bookkeeping. Latency is measured from the event's ` +
    `timestamp (the outbox commit) to its receipt, in whole milliseconds.`
  ].join("\n")
  console.log(table)
  console.log()
  console.log(notes)
  // The table goes between its markers in the performance page; the rest of the page is written by hand and kept.
  const docs = join(import.meta.dirname, "..", "..", "docs", "performance.md")
  const previous = existsSync(docs) ? readFileSync(docs, "utf8") : ""
  const begin = "<!-- bench:webhooks:begin -->"
  const end = "<!-- bench:webhooks:end -->"
  const from = previous.indexOf(begin)
  const to = previous.indexOf(end)
  const command = withPostgres ? "bun run bench:webhooks --database postgres" : "bun run bench:webhooks"
  const block = `${begin}\nProduced by \`${command}\` (scripts/bench/webhooks.ts); the latest run:\n\n${table}\n\n${notes}\n${end}`
  writeFileSync(
    docs,
    from >= 0 && to > from
      ? previous.slice(0, from) + block + previous.slice(to + end.length)
      : `${previous.trimEnd()}\n\n## Webhook delivery\n\n${block}\n`
  )
})

program.pipe(
  Effect.scoped,
  Effect.provide(Layer.mergeAll(Signer.StandardWebhooks, BunContext.layer)),
  Logger.withMinimumLogLevel(LogLevel.Warning),
  Effect.runPromise
).then(() => process.exit(0), (error: unknown) => {
  console.error(error)
  process.exit(1)
})
