import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Option, Schema, Scope } from "effect"
import type * as Pg from "pg"
import { poolExhaustedMessage, statementTimeoutMessage } from "../src/Http/Server.js"
import { DEFAULT_POOL } from "../src/Sql/Postgres.js"
import { RespondentTokens } from "../src/Respondents/RespondentTokens.js"
import { ResponseWriter } from "../src/Responses/ResponseWriter.js"
import { SurveyId } from "../src/Domain/Ids.js"
import { clientAt, clientFor, outcomeOf } from "./support/ApiClient.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { call, decodeAs, get, TestDatabase, testDatabase, TestServer } from "./support/TestServer.js"
import { Count } from "./support/StoredRows.js"
import { onOutside, outsideConnection, serviceLockWaiters } from "./support/OutsideConnection.js"
import { tcpProxy } from "./support/TcpProxy.js"
import { eventually } from "./support/WebhookReceiver.js"
import { polled, PROCESS_TEST_TIMEOUT, request, serveProcess, sharedDatabase, within } from "./support/ServeProcess.js"

/** A finished save of `srv_main` (its one required question answered). */
const finished = { answers: [{ questionId: "q_pick", values: ["a"] }], finished: true }

/** A respondent's save of `finished` through the typed client: a new response. */
const finishedSave = (token: string) =>
  Effect.flatMap(clientFor(token), (respondent) => respondent.respondent.start({ payload: finished, headers: {} }))

/** A respondent of `srv_main`, as a survey page would have made one. */
const respondent = Effect.gen(function*() {
  const tokens = yield* RespondentTokens
  const token = yield* tokens.issue({ surveyId: "srv_main", embedSessionId: null, externalUserId: null })
  return { token, context: Option.getOrThrow(yield* tokens.resolve(token)) }
})

const storedResponses = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.map(
    sql`SELECT count(*) AS n FROM responses WHERE survey_id = 'srv_main'`.pipe(Effect.orDie),
    (rows) => decodeAs(Schema.Array(Count), rows)[0]?.n ?? -1
  ))

/** Takes `srv_main`'s row on an outside connection, in a transaction left open: every new response of the survey waits for it to be counted. */
const holdSurveyRow = (holder: Pg.Client) =>
  Effect.gen(function*() {
    yield* onOutside(holder, "BEGIN")
    yield* onOutside(holder, `SELECT id FROM surveys WHERE id = 'srv_main' FOR NO KEY UPDATE`)
  })

/** Lets the fibers scheduled so far run (an interruption sent a moment ago is taken by its fiber). */
const settle = Effect.gen(function*() {
  for (let i = 0; i < 5; i++) {
    yield* Effect.yieldNow()
    yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 0)))
  }
})

// PostgreSQL only: SQLite has one connection and no pool.
describe.runIf(testDatabase === "postgres")("the PostgreSQL pool", () => {
  // The clock stands still (TestClock): a wait that only a timer could end never ends.
  it.effect("a save interrupted while it waits for its survey's row gives its connection back; the saves queued behind it answer", () =>
    Effect.gen(function*() {
      const writer = yield* ResponseWriter
      const before = yield* storedResponses
      const holder = yield* outsideConnection
      const observer = yield* outsideConnection
      // Another writer of the survey holds its row, as a save counting its new response does.
      yield* holdSurveyRow(holder)

      // Two saves take the pool's two connections and queue behind that lock.
      const first = yield* respondent
      const second = yield* respondent
      const interrupted = yield* Effect.fork(writer.create(first.context, finished))
      yield* eventually(serviceLockWaiters(observer), (n) => n === 1)
      const queued = yield* Effect.fork(writer.create(second.context, finished))
      yield* eventually(serviceLockWaiters(observer), (n) => n === 2)

      // The first one's request goes away while its statement waits; then the lock comes free.
      yield* Fiber.interruptFork(interrupted)
      yield* settle
      yield* onOutside(holder, "COMMIT")

      const saved = yield* Fiber.join(queued)
      expect(saved.created).toBe(true)
      expect(Exit.isInterrupted(yield* Fiber.await(interrupted))).toBe(true)
      // The interrupted save stored nothing; the pool serves the next save.
      const third = yield* respondent
      yield* writer.create(third.context, finished)
      expect(yield* storedResponses).toBe(before + 2)
    }).pipe(
      Effect.scoped,
      Effect.provide(TestDatabase(baseFixture, { databasePoolSize: 2, databasePoolTimeoutMs: 600_000 }))
    ))

  it.effect("a save needs one connection: with a pool of one, concurrent completions all answer 201", () =>
    Effect.gen(function*() {
      const before = yield* storedResponses
      const respondents = yield* Effect.all(Array.from({ length: 6 }, () => respondent))
      const answers = yield* Effect.forEach(respondents, (r) => outcomeOf(finishedSave(r.token)), { concurrency: "unbounded" })
      expect(answers).toEqual(respondents.map(() => "ok"))
      expect(yield* storedResponses).toBe(before + respondents.length)
    }).pipe(Effect.provide(TestServer(baseFixture, { databasePoolSize: 1, databasePoolTimeoutMs: 600_000 }))))

  it.effect("a request that gets no connection within the pool's timeout answers 503 and changes nothing; the next one is served once a connection is free", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const before = yield* storedResponses
      const { token } = yield* respondent
      // The pool's only connection, taken as a long transaction would take it.
      const held = yield* Scope.make()
      yield* Scope.extend(sql.reserve, held)

      // Raw: this 503 is written around the API (src/Http/Server.ts), not by the contract; its body is checked whole.
      const refused = yield* Effect.all([
        call("POST", "/respond/v1/responses", { token, body: JSON.stringify(finished) }),
        get("/api/v1/surveys", TOKENS.editor),
        get("/api/v1/surveys/srv_main/responses", TOKENS.editor)
      ], { concurrency: "unbounded" })
      for (const res of refused) {
        expect(res.status).toBe(503)
        expect(res.body).toEqual({ code: "service_unavailable", message: poolExhaustedMessage })
      }

      yield* Scope.close(held, Exit.void)
      expect(yield* storedResponses).toBe(before)
      expect(yield* outcomeOf(finishedSave(token))).toBe("ok")
      const api = yield* clientFor(TOKENS.editor)
      expect(yield* outcomeOf(api.surveys.list({ urlParams: {} }))).toBe("ok")
      expect(yield* storedResponses).toBe(before + 1)
    }).pipe(
      // The timeout also bounds opening a connection (the pool's first, at start-up): the default
      // leaves a loaded machine room for that; the three refused requests wait it out together.
      Effect.provide(TestServer(baseFixture, { databasePoolSize: 1, databasePoolTimeoutMs: DEFAULT_POOL.acquireTimeoutMs }))
    ))

  it.effect("a statement held up past the statement timeout (a row lock held elsewhere) answers 503 and changes nothing; the connection serves the next request", () =>
    Effect.gen(function*() {
      const before = yield* storedResponses
      const { token } = yield* respondent
      const holder = yield* outsideConnection
      const observer = yield* outsideConnection
      // Another process holds the survey's row and does not let go.
      yield* holdSurveyRow(holder)

      // Raw: this 503 is written around the API (src/Http/Server.ts), not by the contract; its body is checked whole.
      const save = yield* Effect.fork(call("POST", "/respond/v1/responses", { token, body: JSON.stringify(finished) }))
      // The save reached the lock and waits on it: PostgreSQL ends that wait, nobody else does.
      yield* eventually(serviceLockWaiters(observer), (n) => n === 1)
      const refused = yield* Fiber.join(save)
      expect(refused.status).toBe(503)
      expect(refused.body).toEqual({ code: "service_unavailable", message: statementTimeoutMessage })
      expect(yield* serviceLockWaiters(observer)).toBe(0)
      // Nothing of it was written, and the pool's one connection answers the next statements.
      expect(yield* storedResponses).toBe(before)

      yield* onOutside(holder, "COMMIT")
      expect(yield* outcomeOf(finishedSave(token))).toBe("ok")
      expect(yield* storedResponses).toBe(before + 1)
    }).pipe(
      Effect.scoped,
      Effect.provide(TestServer(baseFixture, { databasePoolSize: 1, databaseStatementTimeoutMs: 2000 }))
    ))

  it.live("a SIGTERM drain ends while a request waits on a row lock held elsewhere: the statement timeout stops it, it answers 503, and the process exits 0", () =>
    Effect.gen(function*() {
      const db = yield* sharedDatabase(baseFixture)
      const server = yield* serveProcess(db.flags, { DATABASE_STATEMENT_TIMEOUT_MS: "3000" })
      const [holder, observer] = yield* Effect.provide(Effect.all([outsideConnection, outsideConnection]), db.config)
      // Another process holds a response's row and keeps it until the end of the test.
      yield* onOutside(holder, "BEGIN")
      yield* onOutside(holder, `SELECT id FROM responses WHERE id = 'rsp_1' FOR UPDATE`)

      // Raw: this 503 is written around the API (src/Http/Server.ts), not by the contract; its body is checked whole.
      const deletion = yield* Effect.fork(
        request(`${server.base}/api/v1/surveys/srv_main/responses/rsp_1`, {
          method: "DELETE",
          headers: { authorization: `Bearer ${TOKENS.editor}` }
        })
      )
      yield* polled("the deletion to wait on the row lock", serviceLockWaiters(observer), (n) => n === 1)
      server.proc.kill("SIGTERM")
      expect(yield* server.logged("\"message\":\"draining\"")).toContain("\"inFlight\":1")

      // The lock is still held: only the server's statement timeout ends the wait, the request and the drain.
      const refused = yield* within("the deletion's answer", Fiber.join(deletion))
      expect(refused.status).toBe(503)
      expect(JSON.parse(refused.text)).toEqual({ code: "service_unavailable", message: statementTimeoutMessage })
      expect(yield* within("the process to exit", Effect.promise(() => server.proc.exited))).toBe(0)

      yield* onOutside(holder, "ROLLBACK")
      const left = yield* onOutside(holder, `SELECT count(*) AS n FROM responses WHERE id = 'rsp_1'`)
      expect(Number(left.rows[0]?.n)).toBe(1)
    }).pipe(Effect.scoped), PROCESS_TEST_TIMEOUT)

  // One connection: a statement stuck on it for good would keep every later request waiting.
  it.live("a connection that went silent (no answer, no reset) is given up: the request answers 503, and once the path is back the next one is served", () =>
    Effect.gen(function*() {
      const db = yield* sharedDatabase(baseFixture)
      const url = new URL(db.flags[1] ?? "")
      const proxy = yield* tcpProxy(url.hostname, Number(url.port))
      const proxied = new URL(url)
      proxied.port = String(proxy.port)
      const server = yield* serveProcess(["--database-url", proxied.href], {
        DATABASE_STATEMENT_TIMEOUT_MS: "1000",
        DATABASE_POOL_SIZE: "1"
      })
      const api = yield* clientAt(server.base, TOKENS.editor)
      const survey = outcomeOf(api.surveys.get({ path: { id: SurveyId.make("srv_main") } }))
      expect(yield* within("a read through the proxy", survey)).toBe("ok")

      // The path goes silent: the connection stays open, nothing comes back. The read's statement
      // (or a background loop's, if it took the connection first) waits for an answer until the
      // service gives the connection up.
      proxy.forward(false)
      expect(yield* within("the read's answer while the path is silent", survey)).toBe("ServiceUnavailable")

      // Back: a statement still stuck then (a background loop's, sent just before) is given up in
      // its turn, so the reads are polled until one is served; a connection stuck for good never is.
      proxy.forward(true)
      const served = yield* polled("a read to be served once the path is back", survey, (outcome) => outcome === "ok")
      expect(served).toBe("ok")
    }).pipe(Effect.scoped), PROCESS_TEST_TIMEOUT)
})
