import { describe, expect, it } from "@effect/vitest"
import { Effect, Schedule, Schema } from "effect"
import parsePrometheusTextFormat from "parse-prometheus-text-format"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { SurveyId } from "../src/Domain/Ids.js"
import { clientAt, outcomeOf } from "./support/ApiClient.js"
import { freePort, PROCESS_TEST_TIMEOUT, request, serveProcess, sharedDatabase } from "./support/ServeProcess.js"
import { testDatabase } from "./support/TestServer.js"

/** A scrape as the parser reads it (the shape prom2json writes). */
const Families = Schema.Array(Schema.Struct({
  name: Schema.String,
  type: Schema.String,
  metrics: Schema.Array(Schema.Struct({
    labels: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
    value: Schema.optional(Schema.NumberFromString),
    buckets: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.NumberFromString })),
    count: Schema.optional(Schema.NumberFromString)
  }))
}))
type Families = typeof Families.Type

const scrape = (url: string) =>
  Effect.map(request(url), (res) => {
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toContain("text/plain")
    return Schema.decodeUnknownSync(Families)(parsePrometheusTextFormat(res.text))
  })

const family = (families: Families, name: string) => {
  const found = families.find((f) => f.name === name)
  if (found === undefined) throw new Error(`no ${name} in the scrape: ${families.map((f) => f.name).join(", ")}`)
  return found
}

const labelled = (families: Families, name: string, labels: Readonly<Record<string, string>>) =>
  family(families, name).metrics.filter((m) => Object.entries(labels).every(([key, value]) => m.labels?.[key] === value))

/** A counter's value for `labels`, 0 while the series has not appeared yet. */
const counted = (families: Families, name: string, labels: Readonly<Record<string, string>>) =>
  labelled(families, name, labels).reduce((sum, m) => sum + (m.value ?? 0), 0)

const byId = { route: "/api/v1/surveys/:id", method: "GET", status: "200" }

describe("METRICS_PORT", () => {
  it.live("serves GET /metrics on its own listener in the Prometheus format: requests by route template with a latency histogram, and the process's readings", () =>
    Effect.gen(function*() {
      const db = yield* sharedDatabase(baseFixture)
      const metricsPort = freePort()
      const server = yield* serveProcess(db.flags, { METRICS_PORT: String(metricsPort) })
      expect(yield* server.logged("Metrics on")).toContain(`Metrics on http://127.0.0.1:${metricsPort}/metrics`)
      const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`
      const api = yield* clientAt(server.base, TOKENS.editor)
      const read = (id: string) => outcomeOf(api.surveys.get({ path: { id: SurveyId.make(id) } }))

      // Requests of one route and status only: the parser flattens a histogram's series into one
      // (it keeps no labels of them), so the histogram is read while it has a single series.
      for (const id of ["srv_main", "srv_draft", "srv_closed"]) {
        expect(yield* read(id)).toBe("ok")
      }
      const first = yield* scrape(metricsUrl)
      expect(family(first, "http_server_requests_total").type).toBe("COUNTER")
      expect(counted(first, "http_server_requests_total", byId)).toBe(3)
      const latency = family(first, "http_server_request_duration")
      expect(latency.type).toBe("HISTOGRAM")
      expect(latency.metrics).toHaveLength(1)
      const buckets = Object.entries(latency.metrics[0]?.buckets ?? {})
      expect(buckets.length).toBeGreaterThan(5)
      expect(buckets.find(([le]) => le === "+Inf")?.[1]).toBe(3)
      const bounds = buckets.filter(([le]) => le !== "+Inf").map(([le, n]) => [Number(le), n] as const).sort(([a], [b]) => a - b)
      bounds.forEach(([, n], i) => expect(n).toBeGreaterThanOrEqual(bounds[i - 1]?.[1] ?? 0))

      expect(yield* read("srv_main")).toBe("ok")
      expect(yield* read("srv_nope")).toBe("NotFound")
      const after = yield* scrape(metricsUrl)
      expect(counted(after, "http_server_requests_total", byId)).toBe(4)
      expect(counted(after, "http_server_requests_total", { ...byId, status: "404" })).toBe(1)

      // Route templates only: no id a request named reaches a label.
      const values = after.flatMap((f) => f.metrics.flatMap((m) => Object.values(m.labels ?? {})))
      expect(values.filter((value) => value.includes("srv_"))).toEqual([])

      expect(labelled(after, "process_resident_memory_bytes", {})[0]?.value).toBeGreaterThan(0)
      expect(family(after, "process_cpu_seconds_total").type).toBe("COUNTER")
      expect(labelled(after, "process_cpu_seconds_total", {})[0]?.value).toBeGreaterThan(0)
      expect(labelled(after, "nodejs_eventloop_lag_p99_seconds", {})[0]?.value).toBeGreaterThanOrEqual(0)

      // The delivery backlog's gauges, read by the worker as it starts and every 5 s after: a
      // scrape shows them once the first reading is in (bounded: 40 scrapes).
      const backlog = yield* scrape(metricsUrl).pipe(
        Effect.filterOrFail((families) => families.some((f) => f.name === "webhook_delivery_oldest_due_age")),
        Effect.retry({ times: 40, schedule: Schedule.spaced("250 millis") })
      )
      expect(family(backlog, "webhook_outbox_depth").type).toBe("GAUGE")
      expect(labelled(backlog, "webhook_outbox_depth", {})[0]?.value).toBe(0)
      expect(labelled(backlog, "webhook_delivery_oldest_due_age", {})[0]?.value).toBe(0)
      if (testDatabase === "postgres") {
        // The pool's connections: the service's own statements have opened at least one.
        const pool = yield* scrape(metricsUrl).pipe(
          Effect.filterOrFail((families) => families.some((f) => f.name === "db_client_connection_count")),
          Effect.retry({ times: 40, schedule: Schedule.spaced("250 millis") })
        )
        const open = labelled(pool, "db_client_connection_count", {})
        expect(open.map((m) => m.labels?.["db_client_connection_state"]).sort()).toEqual(["idle", "used"])
        expect(open.reduce((sum, m) => sum + (m.value ?? 0), 0)).toBeGreaterThan(0)
        expect(labelled(pool, "db_client_connection_pending_requests", {})[0]?.value).toBeGreaterThanOrEqual(0)
      }

      // The API's own listener has no /metrics.
      expect((yield* request(`${server.base}/metrics`)).status).toBe(404)
    }).pipe(Effect.scoped), PROCESS_TEST_TIMEOUT)
})
