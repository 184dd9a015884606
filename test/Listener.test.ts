import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Schema } from "effect"
import { clientAt } from "./support/ApiClient.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { onOutside, outsideConnection, serviceLockWaiters } from "./support/OutsideConnection.js"
import { PROCESS_TEST_TIMEOUT, polled, request, serveProcess, sharedDatabase, within } from "./support/ServeProcess.js"
import { testDatabase } from "./support/TestServer.js"
import { receiver } from "./support/WebhookReceiver.js"

type Shared = Effect.Effect.Success<ReturnType<typeof sharedDatabase>>

/**
 * Background work that takes long to release: `hold` takes hold and answers what lets go. On
 * PostgreSQL another process holds the job leases (which a loop renews and a stopping process
 * releases) in an open transaction, once a loop's statement waits on them. On SQLite a statement
 * waiting for a lock blocks the whole process (bun:sqlite waits inside the call), so there the
 * telemetry collector holds the export that a stopping process flushes.
 */
const slowRelease = (db: Shared) =>
  Effect.gen(function*() {
    if (testDatabase === "postgres") {
      const [holder, observer] = yield* Effect.provide(Effect.all([outsideConnection, outsideConnection]), db.config)
      return {
        env: {},
        // The lock is held until released (PostgreSQL's statement timeout, 30 s, aside).
        heldUntilReleased: true,
        hold: Effect.gen(function*() {
          yield* onOutside(holder, "BEGIN")
          yield* onOutside(holder, "LOCK TABLE job_leases IN EXCLUSIVE MODE")
          yield* polled("a background statement to wait on the lock", serviceLockWaiters(observer), (n) => n >= 1)
          return Effect.asVoid(onOutside(holder, "ROLLBACK"))
        })
      }
    }
    let answer: () => void = () => {}
    const answered = new Promise<void>((resolve) => {
      answer = resolve
    })
    const collector = yield* receiver(() => answered.then(() => Response.json({})))
    return {
      // Nothing is exported before the stop; the stop's export waits for the collector.
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${collector.port}`,
        OTEL_BSP_SCHEDULE_DELAY: "600000",
        OTEL_METRIC_EXPORT_INTERVAL: "600000",
        OTEL_EXPORTER_OTLP_TIMEOUT: "600000"
      },
      // The exporter gives its flush at most a few seconds at shutdown.
      heldUntilReleased: false,
      hold: Effect.succeed(Effect.sync(() => answer()))
    }
  })

/** What one request to a stopping process got: an answer, or no connection at all. */
type Polled =
  | { readonly _tag: "answer"; readonly path: string; readonly status: number; readonly body: string; readonly requestId: string | null; readonly retryAfter: string | null }
  | { readonly _tag: "refused" }

const poll = (url: string, path: string, init: RequestInit) =>
  Effect.promise(async (): Promise<Polled> => {
    try {
      const res = await fetch(`${url}${path}`, init)
      const body = await res.text()
      return {
        _tag: "answer",
        path,
        status: res.status,
        body,
        requestId: res.headers.get("x-request-id"),
        retryAfter: res.headers.get("retry-after")
      }
    } catch {
      return { _tag: "refused" }
    }
  })

const ErrorBody = Schema.parseJson(Schema.Struct({ code: Schema.String, message: Schema.String }))
const errorCodeOf = (text: string) => Option.map(Schema.decodeUnknownOption(ErrorBody)(text), (body) => body.code)

/**
 * The answers a stopping process may give: the endpoint's own (`normal`), or 503
 * `service_unavailable` in the documented body with `Retry-After`; either with its request id.
 */
const documented = (answer: Extract<Polled, { _tag: "answer" }>, normal: (answer: { status: number; body: string }) => boolean) =>
  answer.requestId !== null && (
    answer.status === 503
      ? answer.retryAfter !== null && Option.contains(errorCodeOf(answer.body), "service_unavailable")
      : normal(answer)
  )

describe("the listen address", () => {
  it.live("serve --host 127.0.0.1 listens on that address, and HOST sets it from the environment", () =>
    Effect.gen(function*() {
      const db = yield* sharedDatabase(baseFixture)
      const flagged = yield* serveProcess(["--host", "127.0.0.1", ...db.flags])
      expect(yield* flagged.logged("Listening on")).toContain(`"Listening on http://127.0.0.1:${flagged.port}"`)
      const api = yield* clientAt(flagged.base, TOKENS.editor)
      expect((yield* api.surveys.list({ urlParams: {} })).data.length).toBeGreaterThan(0)

      const fromEnv = yield* serveProcess(db.flags, { HOST: "127.0.0.1" })
      expect(yield* fromEnv.logged("Listening on")).toContain(`"Listening on http://127.0.0.1:${fromEnv.port}"`)
      expect((yield* request(`${fromEnv.base}/healthz`)).status).toBe(200)

      // Without either, every interface, as before.
      const everywhere = yield* serveProcess(db.flags)
      expect(yield* everywhere.logged("Listening on")).toContain(`"Listening on http://0.0.0.0:${everywhere.port}"`)
    }).pipe(Effect.scoped), PROCESS_TEST_TIMEOUT)

  it.live("a HOST that names no address is refused at start with one line", () =>
    Effect.gen(function*() {
      const db = yield* sharedDatabase(baseFixture)
      const proc = Bun.spawn(["bun", "src/main.ts", "serve", "--host", " ", ...db.flags], {
        cwd: `${import.meta.dirname}/..`,
        stdout: "pipe",
        stderr: "pipe"
      })
      expect(yield* Effect.promise(() => proc.exited)).toBe(1)
      expect(yield* Effect.promise(() => new Response(proc.stderr).text())).toContain("Invalid data at --host: \"Expected an address or host name to listen on\"")
    }).pipe(Effect.scoped), PROCESS_TEST_TIMEOUT)
})

describe("a serve process stopping with SIGTERM", () => {
  it.live("answers every request with its normal answer or the documented 503 until its port refuses connections, while its background work takes long to release", () =>
    Effect.gen(function*() {
      const db = yield* sharedDatabase(baseFixture)
      // Leases of 2 s: the aggregator renews its lease every second, so one of its statements soon waits.
      const slow = yield* slowRelease(db)
      const server = yield* serveProcess(db.flags, { WORKER_LEASE_SECONDS: "2", ...slow.env })
      const release = yield* slow.hold
      const probes: ReadonlyArray<{ path: string; init: RequestInit; normal: (answer: { status: number; body: string }) => boolean }> = [
        { path: "/healthz", init: {}, normal: ({ body, status }) => status === 200 && body === `{"status":"ok"}` },
        {
          path: "/api/v1/surveys",
          init: { headers: { authorization: `Bearer ${TOKENS.editor}` } },
          normal: ({ status }) => status === 200
        },
        {
          // A respondent's save without a token: refused in the documented body, never "not found".
          path: "/respond/v1/responses",
          init: { method: "POST", headers: { "content-type": "application/json" }, body: "{}" },
          normal: ({ body, status }) => status === 401 && Option.isSome(errorCodeOf(body))
        }
      ]

      server.proc.kill("SIGTERM")
      const seen: Array<Polled> = []
      const undocumented = yield* within(
        "the port to refuse connections",
        Effect.gen(function*() {
          for (let i = 0; i < 100_000; i++) {
            const probe = probes[i % probes.length]
            if (probe === undefined) break
            const polled = yield* poll(server.base, probe.path, probe.init)
            seen.push(polled)
            if (polled._tag === "refused") return []
            if (!documented(polled, probe.normal)) return [polled]
          }
          return []
        })
      )
      // The port closed while the background work was still held.
      const running = server.proc.exitCode === null
      yield* release
      expect(undocumented).toEqual([])
      if (slow.heldUntilReleased) expect(running).toBe(true)
      expect(seen.at(-1)).toEqual({ _tag: "refused" })
      expect(yield* within("the process to exit", Effect.promise(() => server.proc.exited))).toBe(0)
    }).pipe(Effect.scoped), PROCESS_TEST_TIMEOUT)
})
