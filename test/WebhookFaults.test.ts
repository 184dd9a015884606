import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Duration, Effect } from "effect"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { eventually, receiver } from "./support/WebhookReceiver.js"
import { complete, deliveries, loggedAttempts, register, roundWhere, WebhookWorld } from "./support/WebhookWorld.js"
import { advance } from "./support/Advance.js"

/** Registers `url` as the workspace webhook, writes one event and answers its first logged attempt. */
const firstAttempt = <R = never>(url: string, beforeLogged?: Effect.Effect<void, never, R>) =>
  Effect.gen(function*() {
    yield* register(url)
    yield* complete("srv_main")
    yield* advance("1 second")
    if (beforeLogged !== undefined) yield* beforeLogged
    const [attempt] = yield* eventually(loggedAttempts, (all) => all.length >= 1)
    if (attempt === undefined) return yield* Effect.dieMessage("no attempt")
    return attempt
  })

const selfSignedCertificate = () => {
  const dir = mkdtempSync(join(tmpdir(), "webhook-tls-"))
  const result = Bun.spawnSync([
    "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
    "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem")
  ], { stderr: "ignore", stdout: "ignore" })
  if (result.exitCode !== 0) throw new Error("openssl could not create a test certificate")
  return { cert: readFileSync(join(dir, "cert.pem"), "utf8"), key: readFileSync(join(dir, "key.pem"), "utf8") }
}

describe("webhook endpoint faults are recorded as failures", () => {
  it.effect("an endpoint that hangs times out after 15 s with no status", () =>
    Effect.gen(function*() {
      const target = yield* receiver(() => new Promise<Response>(() => {}))
      const attempt = yield* firstAttempt(target.url, Effect.gen(function*() {
        yield* eventually(target.received, (all) => all.length === 1)
        // In two steps: an attempt that gave up at 14 s would be settled before the clock moves on
        // (TestClock waits for every fiber to suspend), and its retry would then fall before 20.1 s.
        yield* advance("14 seconds")
        yield* advance("1 second")
      }))
      expect(attempt).toMatchObject({ ok: 0, responseStatus: null, error: "timed out after 15s", attemptedAt: 100 })
      const [delivery] = yield* deliveries
      expect(delivery?.state).toBe("pending")
      expect(delivery?.nextAttemptAt).toBeGreaterThanOrEqual(15_100 + 5_000)
    }).pipe(Effect.provide(WebhookWorld()), Effect.scoped))

  it.effect("a redirect is not followed and has no status", () =>
    Effect.gen(function*() {
      const elsewhere = yield* receiver()
      const target = yield* receiver(() => Response.redirect(elsewhere.url, 302))
      const attempt = yield* firstAttempt(target.url)
      expect(attempt).toMatchObject({ ok: 0, responseStatus: null, error: "redirect (HTTP 302) not followed" })
      expect(yield* elsewhere.received).toHaveLength(0)
    }).pipe(Effect.provide(WebhookWorld()), Effect.scoped))

  it.effect("a 10 MB answer, or an endless one, is cut off and the status counts", () =>
    Effect.gen(function*() {
      const big = yield* receiver(() => new Response(new Uint8Array(10 * 1024 * 1024)))
      expect(yield* firstAttempt(big.url)).toMatchObject({ ok: 1, responseStatus: 200, error: null })
    }).pipe(Effect.provide(WebhookWorld()), Effect.scoped))

  it.effect("an endless streamed answer is cut off too", () =>
    Effect.gen(function*() {
      const chunk = new Uint8Array(64 * 1024)
      const endless = yield* receiver(() =>
        new Response(new ReadableStream({ pull: (controller) => controller.enqueue(chunk) }), { status: 202 })
      )
      expect(yield* firstAttempt(endless.url)).toMatchObject({ ok: 1, responseStatus: 202, error: null })
    }).pipe(Effect.provide(WebhookWorld()), Effect.scoped))

  it.effect("a connection reset has no status", () =>
    Effect.gen(function*() {
      const listener = yield* Effect.acquireRelease(
        Effect.sync(() =>
          Bun.listen({
            hostname: "127.0.0.1",
            port: 0,
            socket: { data: (socket) => socket.terminate(), open: () => {} }
          })
        ),
        (l) => Effect.sync(() => l.stop(true))
      )
      const attempt = yield* firstAttempt(`http://127.0.0.1:${listener.port}/hook`)
      expect(attempt.ok).toBe(0)
      expect(attempt.responseStatus).toBeNull()
      expect(attempt.error).not.toBeNull()
      expect((attempt.error ?? "").length).toBeLessThanOrEqual(200)
    }).pipe(Effect.provide(WebhookWorld()), Effect.scoped))

  it.effect("a refused connection has no status", () =>
    Effect.gen(function*() {
      const closed = yield* receiver()
      const url = closed.url
      const listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data: () => {} } })
      const port = listener.port
      listener.stop(true)
      const attempt = yield* firstAttempt(`http://127.0.0.1:${port}/hook`)
      expect(attempt).toMatchObject({ ok: 0, responseStatus: null })
      expect(url).toContain("127.0.0.1")
    }).pipe(Effect.provide(WebhookWorld()), Effect.scoped))

  it.effect("a bad TLS certificate fails the attempt with no status", () =>
    Effect.gen(function*() {
      const target = yield* receiver(() => new Response("ok"), { tls: selfSignedCertificate() })
      const attempt = yield* firstAttempt(target.url)
      expect(attempt).toMatchObject({ ok: 0, responseStatus: null })
      expect(yield* target.received).toHaveLength(0)
    }).pipe(Effect.provide(WebhookWorld()), Effect.scoped))

  it.live("a hanging endpoint holds only its share of the slots; other webhooks keep receiving", () =>
    Effect.gen(function*() {
      const hanging = yield* receiver(() => new Promise<Response>(() => {}))
      const healthy = yield* receiver()
      yield* register(hanging.url, "srv_main")
      yield* register(healthy.url)
      for (let i = 0; i < 12; i++) yield* complete("srv_main", "ws_a", `rsp_${i}`)
      const got = yield* eventually(healthy.received, (all) => all.length === 12)
      expect(got).toHaveLength(12)
      // With the hanging webhook's other deliveries due and two slots free, a round claims none:
      // only its share (2) is ever in flight.
      yield* roundWhere((round) => round.inFlight === 2 && round.claimed === 0)
      expect(yield* hanging.receivedAtLeast(2)).toHaveLength(2)
    }).pipe(
      // The receivers stop first: the hanging attempts end there, and the service's drain has nothing to wait for.
      Effect.scoped,
      Effect.provide(WebhookWorld({ maxConcurrent: 4, perWebhook: 2, attemptTimeout: Duration.minutes(5) }))
    ))

  it.live("a webhook with a deep backlog does not hide other webhooks' deliveries behind its own", () =>
    Effect.gen(function*() {
      const hanging = yield* receiver(() => new Promise<Response>(() => {}))
      const healthy = yield* receiver()
      yield* register(hanging.url)
      yield* register(healthy.url, "srv_draft")
      const sql = yield* SqlClient.SqlClient
      yield* sql.withTransaction(Effect.forEach(Array.from({ length: 600 }), () => complete("srv_main"), { discard: true }))
      for (let i = 0; i < 3; i++) yield* complete("srv_draft")
      const got = yield* eventually(healthy.received, (all) => all.length === 3)
      expect(got).toHaveLength(3)
      // The backlogged webhook never has more than its share in flight: once the others are done,
      // a round with hundreds of its deliveries due and free slots claims none of them.
      yield* roundWhere((round) => round.inFlight === 4 && round.claimed === 0)
      expect(yield* hanging.receivedAtLeast(4)).toHaveLength(4)
    }).pipe(
      Effect.scoped,
      Effect.provide(WebhookWorld({ perWebhook: 4, attemptTimeout: Duration.minutes(5) }))
    ))
})
