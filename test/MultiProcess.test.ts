import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { SurveyId } from "../src/Domain/Ids.js"
import { EmbedSessionRequest } from "../src/Embeds/Api.js"
import type { FixtureInput } from "../src/Fixtures/Fixture.js"
import { clientAt, outcomeOf } from "./support/ApiClient.js"
import { TOKENS } from "./support/Fixtures.js"
import { QUOTA_TOKENS, quotaFixture } from "./support/QuotaFixtures.js"
import { respondentFixture } from "./support/RespondentFixtures.js"
import { elsewhereRows, quotaRowsElsewhere } from "./support/Elsewhere.js"
import { cli, polled, PROCESS_TEST_TIMEOUT, request, type ServeProcess, serveProcess, sharedDatabase, within } from "./support/ServeProcess.js"
import { receiver } from "./support/WebhookReceiver.js"

// Two real `serve` processes on one database (a SQLite file; a PostgreSQL database on the PostgreSQL
// pass), as during a rolling restart or with two instances
// behind a load balancer. Leases are 2 s here (WORKER_LEASE_SECONDS) so that a takeover is quick.
const leaseEnv = { WORKER_LEASE_SECONDS: "2" }

// The respondent surveys beside the quota accounts (a burst-50 plan among them).
const fixture: FixtureInput = {
  ...respondentFixture,
  plans: [...(respondentFixture.plans ?? []), ...(quotaFixture.plans ?? [])],
  accounts: [...(respondentFixture.accounts ?? []), ...(quotaFixture.accounts ?? [])],
  workspaces: [...(respondentFixture.workspaces ?? []), ...(quotaFixture.workspaces ?? [])],
  members: [...(respondentFixture.members ?? []), ...(quotaFixture.members ?? [])],
  apiKeys: [...(respondentFixture.apiKeys ?? []), ...(quotaFixture.apiKeys ?? [])],
  surveys: [...(respondentFixture.surveys ?? []), ...(quotaFixture.surveys ?? [])],
  responses: [...(respondentFixture.responses ?? []), ...(quotaFixture.responses ?? [])]
}

const Page = Schema.parseJson(Schema.Struct({ respondentToken: Schema.String }))
const srvShort = { path: { id: SurveyId.make("srv_short") } }

/** A respondent completes `srv_short`: the page from `server` (raw: outside the HttpApi), then one finished save through `saveOn`. */
const completeOn = (server: ServeProcess, saveOn: ServeProcess = server) =>
  Effect.gen(function*() {
    const page = yield* request(`${server.base}/s/srv_short`, { headers: { accept: "application/json" } })
    const respondent = yield* clientAt(saveOn.base, Schema.decodeUnknownSync(Page)(page.text).respondentToken)
    const saved = yield* respondent.respondent.start({
      payload: { answers: [{ questionId: "q_short_text", values: ["hello"] }], finished: true },
      headers: {}
    })
    return saved.responseId
  })

type Shared = Effect.Effect.Success<ReturnType<typeof sharedDatabase>>

/** Reads the shared database over a connection of the test's own: what the processes committed. */
const query = (db: Shared, text: string) => elsewhereRows(text).pipe(Effect.provide(db.config))

const Delivery = Schema.Struct({ id: Schema.Number, state: Schema.String, attempts: Schema.Number, leaseOwner: Schema.NullOr(Schema.String) })
const deliveries = (db: Shared) =>
  Effect.map(
    query(db, "SELECT id, state, attempts, lease_owner FROM deliveries ORDER BY id"),
    Schema.decodeUnknownSync(Schema.Array(Delivery))
  )
const Count = Schema.Struct({ n: Schema.Number })
const count = (db: Shared, text: string) =>
  Effect.map(query(db, text), (rows) => Schema.decodeUnknownSync(Count)(rows[0]).n)

describe("two serve processes on one database", () => {
  it.live("deliver every event once, count every completion once, share respondent tokens, load an embed URL once and see a revocation", () =>
    Effect.gen(function*() {
      const db = yield* sharedDatabase(fixture)
      const target = yield* receiver()
      const a = yield* serveProcess(db.flags, leaseEnv)
      const b = yield* serveProcess(db.flags, leaseEnv)
      const [onA, onB] = [yield* clientAt(a.base, TOKENS.editor), yield* clientAt(b.base, TOKENS.editor)]
      yield* onA.workspaceWebhooks.put({ payload: { targetUrl: target.url } })

      // Completions through both processes, in parallel; a respondent token from one process
      // saves through the other.
      const completions = 24
      const ids = yield* Effect.forEach(
        Array.from({ length: completions }, (_, i) => (i % 2 === 0 ? a : b)),
        (server, i) => completeOn(server, i % 3 === 0 ? (server === a ? b : a) : server),
        { concurrency: 8 }
      )
      expect(new Set(ids).size).toBe(completions)

      // Each event reaches the receiver once: every delivery ends delivered after one attempt.
      yield* within("every event at the receiver", target.receivedAtLeast(completions))
      const settled = yield* polled(
        "every delivery written delivered",
        deliveries(db),
        (all) => all.length === completions && all.every((d) => d.state === "delivered")
      )
      expect(settled.every((d) => d.attempts === 1)).toBe(true)
      const received = yield* target.received
      expect(received).toHaveLength(completions)
      expect(new Set(received.map((r) => r.headers["webhook-id"])).size).toBe(completions)
      expect(yield* count(db, "SELECT COUNT(*) AS n FROM delivery_attempts")).toBe(completions)

      // Each completion counted once in the stored analytics, whichever process aggregated it.
      const before = (fixture.responses ?? []).filter((r) => r.surveyId === "srv_short" && r.completedAt !== null).length
      const counted = yield* polled(
        "every completion aggregated",
        Effect.zip(Effect.orDie(onA.analytics.get(srvShort)), count(db, "SELECT COUNT(*) AS n FROM response_changes")),
        ([stats, pending]) => pending === 0 && stats.completedCount >= before + completions
      )
      expect(counted[0].completedCount).toBe(before + completions)
      expect(counted[0].responseCount).toBe(before + completions)
      expect((yield* onB.analytics.get(srvShort)).completedCount).toBe(before + completions)

      // An embed URL made through one process loads once over both (raw: the embed page is outside the HttpApi).
      const embed = yield* onA.embedSessions.create({
        ...srvShort,
        payload: new EmbedSessionRequest({ externalUserId: "user-1" }),
        headers: {}
      })
      const path = new URL(embed.embedUrl).pathname
      const loads = yield* Effect.forEach(
        Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? a : b)),
        (server) => Effect.map(request(`${server.base}${path}`, { headers: { accept: "application/json" } }), (r) => r.status),
        { concurrency: "unbounded" }
      )
      expect(loads.filter((s) => s === 200)).toHaveLength(1)
      expect(loads.filter((s) => s === 410)).toHaveLength(loads.length - 1)

      // A key both processes have used (and remember) stops working on both once revoked elsewhere.
      const created = yield* cli(["keys", "create", "--workspace", "ws_a", "--account", "acc_owner", ...db.flags])
      const key = created.trim()
      const [keyOnA, keyOnB] = [yield* clientAt(a.base, key), yield* clientAt(b.base, key)]
      const listOnA = outcomeOf(keyOnA.surveys.list({ urlParams: {} }))
      const listOnB = outcomeOf(keyOnB.surveys.list({ urlParams: {} }))
      expect([yield* listOnA, yield* listOnB, yield* listOnA, yield* listOnB]).toEqual(["ok", "ok", "ok", "ok"])
      yield* cli(["keys", "revoke", key, ...db.flags])
      expect([yield* listOnA, yield* listOnB]).toEqual(["Unauthorized", "Unauthorized"])
    }).pipe(Effect.scoped), PROCESS_TEST_TIMEOUT)

  it.live("hold a burst limit of 50 exactly: 200 parallel requests over both admit 50", () =>
    Effect.gen(function*() {
      const db = yield* sharedDatabase(fixture)
      const a = yield* serveProcess(db.flags, leaseEnv)
      const b = yield* serveProcess(db.flags, leaseEnv)
      const [onA, onB] = [yield* clientAt(a.base, QUOTA_TOKENS.crowd), yield* clientAt(b.base, QUOTA_TOKENS.crowd)]
      const outcomes = yield* Effect.forEach(
        Array.from({ length: 200 }, (_, i) => i),
        (i) => {
          const api = i % 2 === 0 ? onA : onB
          return i % 4 < 2
            ? outcomeOf(api.usage.get())
            : outcomeOf(api.responses.list({ path: { id: SurveyId.make("srv_q") }, urlParams: {} }))
        },
        { concurrency: "unbounded" }
      )
      expect(outcomes.filter((s) => s === "ok")).toHaveLength(50)
      expect(outcomes.filter((s) => s === "RateLimited")).toHaveLength(150)
      const stored = yield* quotaRowsElsewhere("SELECT SUM(count) AS n FROM usage_daily WHERE account_id = 'acc_crowd'").pipe(
        Effect.provide(db.config)
      )
      expect(Schema.decodeUnknownSync(Count)(stored[0]).n).toBe(50)
    }).pipe(Effect.scoped), PROCESS_TEST_TIMEOUT)

  it.live("a delivery held by a process killed with SIGKILL is taken over by the other once its lease runs out", () =>
    Effect.gen(function*() {
      const db = yield* sharedDatabase(fixture)
      // The receiver keeps the first attempt waiting, so that its process is killed mid-attempt.
      let answering = false
      const target = yield* receiver(() => answering ? new Response("ok") : new Promise<Response>(() => {}))
      const a = yield* serveProcess(db.flags, leaseEnv)
      const b = yield* serveProcess(db.flags, leaseEnv)
      const api = yield* clientAt(a.base, TOKENS.editor)
      yield* api.workspaceWebhooks.put({ payload: { targetUrl: target.url } })
      yield* completeOn(a)
      const [first] = yield* within("the first attempt at the receiver", target.receivedAtLeast(1))
      const [held] = yield* deliveries(db)
      const holder = [a, b].find((p) => held?.leaseOwner?.includes(`:${p.pid}:`) === true)
      const survivor = holder === a ? b : a
      expect(holder).toBeDefined()
      holder?.proc.kill(9)
      yield* Effect.promise(() => holder?.proc.exited ?? Promise.resolve(0))
      answering = true

      yield* within("the survivor's attempt at the receiver", target.receivedAtLeast(2))
      const [done] = yield* polled("the delivery written delivered", deliveries(db), (all) => all[0]?.state === "delivered")
      const all = yield* target.received
      expect(all).toHaveLength(2)
      expect(all[1]?.headers["webhook-id"]).toBe(first?.headers["webhook-id"])
      // Attempted once by the survivor; the killed process's attempt never finished.
      expect(done?.attempts).toBe(1)
      expect(survivor.proc.exitCode).toBeNull()
    }).pipe(Effect.scoped), PROCESS_TEST_TIMEOUT)
})

describe("a serve process stopping with SIGTERM", () => {
  it.live("stops admitting, finishes its request and delivery in flight, releases its leases and exits 0", () =>
    Effect.gen(function*() {
      const db = yield* sharedDatabase(fixture)
      // The receiver holds every request until released.
      let release: () => void = () => {}
      const released = new Promise<void>((resolve) => {
        release = resolve
      })
      const target = yield* receiver(() => released.then(() => new Response("ok")))
      const server = yield* serveProcess(db.flags, leaseEnv)
      const api = yield* clientAt(server.base, TOKENS.editor)
      yield* api.workspaceWebhooks.put({ payload: { targetUrl: target.url } })
      yield* completeOn(server)
      yield* within("the delivery at the receiver", target.receivedAtLeast(1))
      // A request in flight: the test event waits on the receiver too.
      const testEvent = yield* Effect.fork(api.workspaceWebhooks.test())
      yield* within("the test event at the receiver", target.receivedAtLeast(2))

      server.proc.kill("SIGTERM")
      // Logged once it stopped admitting, with the two still in flight.
      expect(yield* server.logged("\"message\":\"draining\"")).toContain("\"inFlight\":2")
      const health = yield* request(`${server.base}/healthz`)
      expect(health.status).toBe(503)
      expect(yield* outcomeOf(api.surveys.list({ urlParams: {} }))).toBe("ServiceUnavailable")
      expect(server.proc.exitCode).toBeNull()

      release()
      expect(yield* testEvent.await.pipe(Effect.flatten)).toEqual({ delivered: true })
      const code = yield* Effect.promise(() => server.proc.exited)
      expect(code).toBe(0)
      const [delivery] = yield* deliveries(db)
      expect(delivery?.state).toBe("delivered")
      expect(delivery?.leaseOwner).toBeNull()
      expect(yield* count(db, "SELECT COUNT(*) AS n FROM job_leases WHERE holder IS NOT NULL AND lease_until > 0")).toBe(0)
    }).pipe(Effect.scoped), PROCESS_TEST_TIMEOUT)
})
