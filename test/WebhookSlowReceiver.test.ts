import { HttpServer } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Either, Fiber, Layer, TestClock } from "effect"
import { idleTimeoutFor } from "../src/Http/IdleTimeout.js"
import { Webhook } from "standardwebhooks"
import { DeliveryLog, WebhookRegistered } from "../src/Webhooks/Api.js"
import { DeliverySettings } from "../src/Webhooks/DeliverySettings.js"
import { send } from "../src/Webhooks/Sender.js"
import { Resolver } from "../src/Webhooks/UrlPolicy.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { bunTestServer, decodeAs, TestServer } from "./support/TestServer.js"
import { type Received, receiver } from "./support/WebhookReceiver.js"

// Real sockets and real time: Bun's idle timeout is not driven by the test clock. The attempt
// timeout is made short so that the test takes seconds, and the server's idle timeout shorter
// still: with an idle timeout of 1 s, Bun drops a silent connection after about 4 s (it checks
// idle connections every few seconds), before the 5 s attempt timeout is over.
const attemptTimeout = Duration.seconds(5)
const floor = 1

/** The service on a Bun server with `idleTimeout`, attempts timing out after 5 s. */
const service = (idleTimeout: number) =>
  TestServer(baseFixture, {}, { httpServer: bunTestServer({ idleTimeout }) }).pipe(
    Layer.provide(Layer.succeed(DeliverySettings, { ...DeliverySettings.defaultValue(), attemptTimeout }))
  )

/** A raw request on a connection of its own; a dropped connection is a Left. */
const request = (port: number, method: string, path: string, body?: unknown) =>
  Effect.tryPromise(async () => {
    const response = await fetch(`http://127.0.0.1:${port}/api/v1${path}`, {
      method,
      keepalive: false,
      headers: { authorization: `Bearer ${TOKENS.editor}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    return { status: response.status, body: JSON.parse(await response.text()) as unknown }
  }).pipe(Effect.either)

const portOf = Effect.map(HttpServer.HttpServer, (server) =>
  server.address._tag === "TcpAddress" ? server.address.port : 0)

describe("test events to a receiver slower than the attempt timeout", () => {
  it.live("answer delivered false at the attempt timeout; the connection outlives the server's idle timeout", () =>
    Effect.gen(function*() {
      // The receiver never answers.
      const slow = yield* receiver(() => new Promise<Response>(() => {}))
      const derived = yield* Layer.build(service(idleTimeoutFor(attemptTimeout, floor)))
      const bare = yield* Layer.build(service(floor))
      const derivedPort = yield* Effect.provide(portOf, derived)
      const barePort = yield* Effect.provide(portOf, bare)
      const secretOf = (answer: Either.Either<{ readonly body: unknown }, unknown>) =>
        decodeAs(WebhookRegistered, Either.getOrThrow(answer).body).signingSecret
      const derivedWorkspace = secretOf(yield* request(derivedPort, "PUT", "/webhooks", { targetUrl: slow.url }))
      const bareWorkspace = secretOf(yield* request(barePort, "PUT", "/webhooks", { targetUrl: slow.url }))
      const derivedSurvey = secretOf(
        yield* request(derivedPort, "PUT", "/surveys/srv_main/webhook", { targetUrl: slow.url })
      )
      // Which webhook a request was meant for: the secret its signature verifies with.
      const signedWith = (secret: string) => (all: ReadonlyArray<Received>) =>
        all.filter((r) => {
          try {
            new Webhook(secret).verify(r.body, r.headers)
            return true
          } catch {
            return false
          }
        }).length

      const [workspace, survey, bareAnswer] = yield* Effect.all([
        request(derivedPort, "POST", "/webhooks/test"),
        request(derivedPort, "POST", "/surveys/srv_main/webhook/test"),
        // The same service on a server whose idle timeout ignores the wait: dropped, no answer.
        request(barePort, "POST", "/webhooks/test")
      ], { concurrency: "unbounded" })

      expect(Either.getOrThrow(workspace)).toEqual({ status: 200, body: { delivered: false } })
      expect(Either.getOrThrow(survey)).toEqual({ status: 200, body: { delivered: false } })
      expect(Either.isLeft(bareAnswer)).toBe(true)
      // Both test events of the derived server reached the receiver, once each.
      const received = yield* slow.receivedWhere((all) =>
        signedWith(derivedWorkspace)(all) >= 1 && signedWith(derivedSurvey)(all) >= 1
      )
      expect(signedWith(derivedWorkspace)(received)).toBe(1)
      expect(signedWith(derivedSurvey)(received)).toBe(1)
      // The bare server's attempt reached it at most once: not at all when its connection was
      // dropped before the service got that far. Nothing else came.
      const all = yield* slow.received
      expect(signedWith(bareWorkspace)(all)).toBeLessThanOrEqual(1)
      expect(signedWith(derivedWorkspace)(all) + signedWith(derivedSurvey)(all) + signedWith(bareWorkspace)(all))
        .toBe(all.length)

      for (const path of ["/webhooks/deliveries", "/surveys/srv_main/webhook/deliveries"]) {
        const log = Either.getOrThrow(yield* request(derivedPort, "GET", path))
        const attempts = decodeAs(DeliveryLog, log.body).data
        expect(attempts).toHaveLength(1)
        expect(attempts[0]).toMatchObject({ eventType: "webhook.test", ok: false, responseStatus: null, error: "timed out after 5s" })
      }
    }).pipe(Effect.scoped))

  it.effect("a name that takes long to resolve counts against the same attempt timeout", () =>
    Effect.gen(function*() {
      const attempt = yield* Effect.fork(
        send({
          targetUrl: "https://hooks.example.com/hook",
          body: "{}",
          headers: {},
          allowPrivate: false,
          timeout: Duration.seconds(15)
        }).pipe(Effect.provideService(Resolver, { resolve: () => Effect.never }))
      )
      yield* TestClock.adjust("15 seconds")
      expect(yield* Fiber.join(attempt)).toEqual({
        ok: false,
        responseStatus: null,
        error: "timed out after 15s",
        retryAfter: null
      })
    }))

  it("the production server waits out the 15 s attempt and the 5 s busy timeout with room to spare", () => {
    expect(idleTimeoutFor(Duration.seconds(15))).toBe(25)
    expect(idleTimeoutFor(Duration.seconds(5), 1)).toBe(15)
    expect(idleTimeoutFor(Duration.millis(500))).toBe(11)
    expect(idleTimeoutFor(Duration.hours(1))).toBe(255)
  })
})

