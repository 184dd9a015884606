import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Either, Fiber, Layer, TestClock } from "effect"
import { idleTimeoutFor } from "../src/Http/IdleTimeout.js"
import { Webhook } from "standardwebhooks"
import { SurveyId } from "../src/Domain/Ids.js"
import { DeliverySettings } from "../src/Webhooks/DeliverySettings.js"
import { send } from "../src/Webhooks/Sender.js"
import { Resolver } from "../src/Webhooks/UrlPolicy.js"
import { clientFor } from "./support/ApiClient.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { bunTestServer, TestServer } from "./support/TestServer.js"
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

const srvMain = { path: { id: SurveyId.make("srv_main") } }

describe("test events to a receiver slower than the attempt timeout", () => {
  it.live("answer delivered false at the attempt timeout; the connection outlives the server's idle timeout", () =>
    Effect.gen(function*() {
      // The receiver never answers.
      const slow = yield* receiver(() => new Promise<Response>(() => {}))
      // Each server's own test client: a connection of its own for every request (bunTestServer).
      const clientOf = (idleTimeout: number) =>
        Effect.flatMap(Layer.build(service(idleTimeout)), (server) => Effect.provide(clientFor(TOKENS.editor), server))
      const derived = yield* clientOf(idleTimeoutFor(attemptTimeout, floor))
      const bare = yield* clientOf(floor)
      const payload = { targetUrl: slow.url }
      const derivedWorkspace = (yield* derived.workspaceWebhooks.put({ payload })).signingSecret
      const bareWorkspace = (yield* bare.workspaceWebhooks.put({ payload })).signingSecret
      const derivedSurvey = (yield* derived.surveyWebhook.put({ ...srvMain, payload })).signingSecret
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

      // The typed calls succeed only on the declared 200.
      const [workspace, survey, bareAnswer] = yield* Effect.all([
        derived.workspaceWebhooks.test({}),
        derived.surveyWebhook.test(srvMain),
        // The same service on a server whose idle timeout ignores the wait: dropped, no answer.
        Effect.either(bare.workspaceWebhooks.test({}))
      ], { concurrency: "unbounded" })

      expect(workspace).toEqual({ delivered: false })
      expect(survey).toEqual({ delivered: false })
      expect(Either.isLeft(bareAnswer) && bareAnswer.left._tag).toBe("RequestError")
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

      const logs = [
        derived.workspaceWebhooks.deliveries({ urlParams: {} }),
        derived.surveyWebhook.deliveries({ ...srvMain, urlParams: {} })
      ]
      for (const log of logs) {
        const attempts = (yield* log).data
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

