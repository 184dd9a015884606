import { expect, layer } from "@effect/vitest"
import { Effect, Layer, Ref } from "effect"
import { SurveyId } from "../src/Domain/Ids.js"
import { Resolver } from "../src/Webhooks/UrlPolicy.js"
import { clientFor } from "./support/ApiClient.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { TestServer } from "./support/TestServer.js"

// A public-looking name that the test resolver maps to a public address; nothing is sent to it.
const publicResolver = Layer.succeed(Resolver, {
  resolve: (host: string) =>
    host === "hooks.example.com"
      ? Effect.succeed([{ address: "93.184.216.34", family: 4 as const }])
      : Effect.fail(`could not resolve ${host}`)
})

/** Two settings a survey's webhook is switched between: each URL goes with its own event types and rate. */
const settings = [
  { targetUrl: "https://hooks.example.com/completions", events: ["response.completed"], maxAttemptsPerSecond: null },
  { targetUrl: "https://hooks.example.com/changes", events: ["response.created", "response.updated"], maxAttemptsPerSecond: 5 }
] as const

const puts = 150

layer(TestServer(baseFixture, { webhookAllowPrivateTargets: false }).pipe(Layer.provide(publicResolver)))(
  "webhook settings read while they are replaced",
  (it) => {
    it.effect("are one PUT's settings: its URL with its event types and rate, never another's", () =>
      Effect.gen(function*() {
        const api = yield* clientFor(TOKENS.editor)
        const srvMain = { path: { id: SurveyId.make("srv_main") } }
        const done = yield* Ref.make(false)
        // The typed calls succeed only on the declared 200.
        const writer = Effect.gen(function*() {
          for (let i = 0; i < puts; i++) {
            yield* api.surveyWebhook.put({ ...srvMain, payload: i % 2 === 0 ? settings[0] : settings[1] })
          }
        }).pipe(Effect.ensuring(Ref.set(done, true)))
        const reads: Array<{
          readonly targetUrl: string | null
          readonly events: ReadonlyArray<string>
          readonly maxAttemptsPerSecond: number | null
        }> = []
        const reader = Effect.gen(function*() {
          // Bounded by the writer's end and by count.
          while (!(yield* Ref.get(done)) && reads.length < 20 * puts) {
            const read = yield* api.surveyWebhook.get(srvMain)
            reads.push({ targetUrl: read.targetUrl, events: read.events, maxAttemptsPerSecond: read.maxAttemptsPerSecond })
          }
        })
        yield* Effect.all([writer, reader, reader, reader], { concurrency: "unbounded", discard: true })
        const known = [{ targetUrl: null, events: [], maxAttemptsPerSecond: null }, ...settings].map((s) => JSON.stringify(s))
        const mixed = reads.filter((read) => !known.includes(JSON.stringify(read)))
        expect(reads.length).toBeGreaterThan(0)
        expect({ reads: reads.length, mixed: mixed.length, first: mixed[0] }).toEqual({
          reads: reads.length,
          mixed: 0,
          first: undefined
        })
      }), 120_000)
  }
)
