import { expect, layer } from "@effect/vitest"
import { Chunk, Clock, Deferred, Duration, Effect, Fiber, Layer, TestClock } from "effect"
import { InvalidRequest } from "../src/Domain/Errors.js"
import { DNS_LOOKUP_TIMEOUT, Resolver, TARGET_REFUSED } from "../src/Webhooks/UrlPolicy.js"
import { clientFor } from "./support/ApiClient.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { TestServer } from "./support/TestServer.js"
import { eventually } from "./support/WebhookReceiver.js"

/** Told when the resolver is asked for the name that never answers. */
const asked = Effect.runSync(Deferred.make<void>())

// Names as an inside resolver might answer them; nothing is sent anywhere.
const insideResolver = Layer.succeed(Resolver, {
  resolve: (host: string) =>
    host === "public.example.com"
      ? Effect.succeed([{ address: "93.184.216.34", family: 4 as const }])
      : host === "db.internal.example"
      ? Effect.succeed([{ address: "10.20.30.40", family: 4 as const }])
      : host === "mixed.example.com"
      ? Effect.succeed([{ address: "93.184.216.34", family: 4 as const }, { address: "fd00::1", family: 6 as const }])
      : host === "empty.example.com"
      ? Effect.succeed([])
      : host === "slow.example.com"
      ? Effect.zipRight(Deferred.succeed(asked, undefined), Effect.never)
      : Effect.fail(`could not resolve ${host}`)
})

const api = clientFor(TOKENS.editor)

const put = (targetUrl: string) => Effect.flatMap(api, (client) => client.workspaceWebhooks.put({ payload: { targetUrl } }))

const settings = Effect.flatMap(api, (client) => client.workspaceWebhooks.get({}))

/** The refusal of a PUT: fails the test unless it was refused as invalid. */
const refusal = (targetUrl: string) =>
  Effect.flatMap(Effect.flip(put(targetUrl)), (error) =>
    error instanceof InvalidRequest
      ? Effect.succeed({ message: error.message, issues: error.issues })
      : Effect.dieMessage(`${targetUrl} refused as ${error._tag}, not as invalid`))

const NONE = {
  enabled: false, targetUrl: null, events: [], disabledReason: null, previousSecretExpiresAt: null, maxAttemptsPerSecond: null
}

layer(TestServer(baseFixture, { webhookAllowPrivateTargets: false }).pipe(Layer.provide(insideResolver)))(
  "webhook targets refused for where they point",
  (it) => {
    it.effect("one message for an unresolvable name, a private answer, a mixed one, none, a private literal", () =>
      Effect.gen(function*() {
        const refused = [
          "https://no-such-host.example/hook",
          "https://db.internal.example/hook",
          "https://mixed.example.com/hook",
          "https://empty.example.com/hook",
          "https://10.0.0.1/hook",
          "https://localhost/hook"
        ]
        for (const targetUrl of refused) {
          expect([targetUrl, yield* refusal(targetUrl)]).toEqual([targetUrl, {
            message: `Invalid \`targetUrl\`: ${TARGET_REFUSED}.`,
            issues: [{ path: "targetUrl", message: TARGET_REFUSED }]
          }])
        }
        expect(yield* settings).toEqual(NONE)
        // The typed calls succeed only on the declared 200 and 204.
        yield* put("https://public.example.com/hook")
        yield* Effect.flatMap(api, (client) => client.workspaceWebhooks.delete({}))
      }))

    it.effect("a name that does not resolve in time is refused the same way once the lookup timeout passes", () =>
      Effect.gen(function*() {
        const start = yield* Clock.currentTimeMillis
        const pending = yield* Effect.fork(refusal("https://slow.example.com/hook"))
        yield* Deferred.await(asked)
        // The lookup's timer is set: moving the clock past it is what ends the wait.
        const deadline = start + Duration.toMillis(DNS_LOOKUP_TIMEOUT)
        yield* eventually(TestClock.sleeps(), (sleeps) => Chunk.some(sleeps, (at) => at === deadline))
        yield* TestClock.adjust(DNS_LOOKUP_TIMEOUT)
        expect((yield* Fiber.join(pending)).issues).toEqual([{ path: "targetUrl", message: TARGET_REFUSED }])
        expect(yield* settings).toEqual(NONE)
      }))
  }
)
