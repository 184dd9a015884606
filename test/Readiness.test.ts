import { describe, expect, it } from "@effect/vitest"
import { SqlClient, Statement } from "@effect/sql"
import { Deferred, Effect, Redacted, TestClock } from "effect"
import { clientAt } from "./support/ApiClient.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { PROCESS_TEST_TIMEOUT, request, serveProcess, sharedDatabase, within } from "./support/ServeProcess.js"
import { tcpProxy } from "./support/TcpProxy.js"
import { get, postgresDatabase, TestServer, testDatabase } from "./support/TestServer.js"
import { eventually, receiver } from "./support/WebhookReceiver.js"

const ready = { status: "ready" }
const notReady = (reason: string) => ({ status: "not_ready", reason })

describe("GET /readyz", () => {
  it.effect("is ready on a migrated database, and answers 503 migrations while a migration this binary knows is missing", () =>
    Effect.gen(function*() {
      const healthy = yield* get("/readyz")
      expect([healthy.status, healthy.body]).toEqual([200, ready])

      const sql = yield* SqlClient.SqlClient
      // As if the database were an older binary's: the last migration has not run.
      yield* sql`UPDATE schema_migrations SET migration_id = 9016 WHERE migration_id = 16`
      // The answer of the check before is reused for a second from its start.
      expect((yield* get("/readyz")).body).toEqual(ready)
      yield* TestClock.adjust("1 second")
      const behind = yield* get("/readyz")
      expect([behind.status, behind.body]).toEqual([503, notReady("migrations")])
      // A migration this binary does not know (a newer binary's) does not make it unready.
      yield* sql`UPDATE schema_migrations SET migration_id = 16 WHERE migration_id = 9016`
      yield* sql`INSERT INTO schema_migrations (migration_id, name) VALUES (9017, 'newer')`
      yield* TestClock.adjust("1 second")
      const newer = yield* get("/readyz")
      expect([newer.status, newer.body]).toEqual([200, ready])

      // /healthz stays the liveness check: it never asks the database.
      const health = yield* get("/healthz")
      expect([health.status, health.body]).toEqual([200, { status: "ok" }])
    }).pipe(Effect.provide(TestServer(baseFixture)), Effect.orDie))

  it.effect("answers concurrent probes from one statement, reused for up to a second", () => {
    let statements = 0
    const counting: Statement.Statement.Transformer = (self) =>
      Effect.sync(() => {
        if (self.compile()[0].includes("SELECT migration_id FROM schema_migrations")) statements++
        return self
      })
    return Effect.gen(function*() {
      const probes = Effect.forEach(Array.from({ length: 20 }, () => get("/readyz")), (probe) => probe, { concurrency: "unbounded" })
      const before = statements
      const first = yield* probes
      expect(first.map((res) => res.status)).toEqual(Array.from({ length: 20 }, () => 200))
      expect(statements - before).toBe(1)
      // Within the second from that check's start: its answer again, no statement.
      yield* TestClock.adjust("999 millis")
      yield* probes
      expect(statements - before).toBe(1)
      // Past it: one new check, whatever the number of probes.
      yield* TestClock.adjust("1 millis")
      yield* probes
      expect(statements - before).toBe(2)
    }).pipe(Effect.provide(TestServer(baseFixture)), Statement.withTransformer(counting))
  })
})

// PostgreSQL only: SQLite is a file inside the process, and a statement that waits on it (a lock
// held past the busy timeout) holds the whole process, so no answer could say "database".
describe.runIf(testDatabase === "postgres")("GET /readyz while PostgreSQL stops answering", () => {
  it.live("answers 503 database within about a second while PostgreSQL stops answering, and ready once it answers again", () =>
    Effect.gen(function*() {
      const direct = new URL(yield* postgresDatabase())
      const proxy = yield* tcpProxy(direct.hostname, Number(direct.port))
      const viaProxy = new URL(direct)
      viaProxy.port = String(proxy.port)
      yield* Effect.gen(function*() {
        expect((yield* get("/readyz")).body).toEqual(ready)

        proxy.forward(false)
        // Probes one after another: the ready answer is reused up to a second, then the first
        // probe to run a check of its own waits for the readiness bound.
        let took = 0
        const silent = yield* eventually(
          Effect.gen(function*() {
            const started = performance.now()
            const res = yield* get("/readyz")
            took = performance.now() - started
            return res
          }),
          (res) => res.status === 503,
          { tries: 400, everyMillis: 25 }
        )
        expect([silent.status, silent.body]).toEqual([503, notReady("database")])
        // Answered by the readiness bound (a second), not by a failed connection: the silent relay
        // never refuses, so the answer came only once the bound had passed.
        expect(took).toBeGreaterThanOrEqual(900)

        proxy.forward(true)
        const back = yield* eventually(get("/readyz"), (res) => res.status === 200, { tries: 400, everyMillis: 25 })
        expect(back.body).toEqual(ready)
      }).pipe(
        // A short statement timeout: the connection left waiting is given up within seconds.
        Effect.provide(TestServer(baseFixture, { databaseUrl: Redacted.make(viaProxy.toString()), databaseStatementTimeoutMs: 500 }))
      )
    }).pipe(Effect.scoped))
})

describe("GET /readyz on a draining serve process", () => {
  it.live("answers 503 draining while requests in flight finish, when every other route answers 503 service_unavailable", () =>
    Effect.gen(function*() {
      const db = yield* sharedDatabase(baseFixture)
      // The receiver holds every request until the test releases it.
      const released = yield* Deferred.make<void>()
      const target = yield* receiver(() => Effect.runPromise(Effect.as(Deferred.await(released), new Response("ok"))))
      const server = yield* serveProcess(db.flags)
      const api = yield* clientAt(server.base, TOKENS.editor)
      yield* api.workspaceWebhooks.put({ payload: { targetUrl: target.url } })
      expect(yield* request(`${server.base}/readyz`)).toMatchObject({ status: 200, text: `{"status":"ready"}` })

      // A request in flight: the test event waits on the receiver until released.
      const testEvent = yield* Effect.fork(api.workspaceWebhooks.test())
      yield* within("the test event at the receiver", target.receivedAtLeast(1))

      server.proc.kill("SIGTERM")
      yield* server.logged("\"message\":\"draining\"")
      const draining = yield* request(`${server.base}/readyz`)
      expect([draining.status, draining.text]).toEqual([503, `{"status":"not_ready","reason":"draining"}`])
      expect(draining.headers.get("x-request-id")).not.toBeNull()
      const health = yield* request(`${server.base}/healthz`)
      expect(health.status).toBe(503)
      expect(health.text).toContain("service_unavailable")

      yield* Deferred.succeed(released, undefined)
      expect(yield* Effect.flatten(testEvent.await)).toEqual({ delivered: true })
      expect(yield* within("the process to exit", Effect.promise(() => server.proc.exited))).toBe(0)
    }).pipe(Effect.scoped), PROCESS_TEST_TIMEOUT)
})
