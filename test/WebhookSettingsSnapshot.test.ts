import { expect, layer } from "@effect/vitest"
import { Effect, Layer, Ref } from "effect"
import { WebhookSettings } from "../src/Webhooks/Api.js"
import { Resolver } from "../src/Webhooks/UrlPolicy.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { bodyOf, call, get, TestServer } from "./support/TestServer.js"

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
        const done = yield* Ref.make(false)
        const writer = Effect.gen(function*() {
          for (let i = 0; i < puts; i++) {
            const res = yield* call("PUT", "/api/v1/surveys/srv_main/webhook", {
              token: TOKENS.editor,
              body: JSON.stringify(settings[i % 2])
            })
            expect(res.status).toBe(200)
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
            const res = yield* get("/api/v1/surveys/srv_main/webhook", TOKENS.editor)
            expect(res.status).toBe(200)
            const read = bodyOf(WebhookSettings, res)
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
