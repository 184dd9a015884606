import { DrainSettings } from "../src/Background/Drain.js"
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Context, Duration, Effect, Exit, Layer, Logger, Queue, Scope, TestClock } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { AppConfig } from "../src/Config.js"
import { Deliveries } from "../src/Webhooks/Deliveries.js"
import { Signer } from "../src/Webhooks/Signer.js"
import { Resolver, TARGET_REFUSED } from "../src/Webhooks/UrlPolicy.js"
import { WebhookRepo } from "../src/Webhooks/WebhookRepo.js"
import { elsewhereRows } from "./support/Elsewhere.js"
import { eventually, receiver } from "./support/WebhookReceiver.js"
import { claimedIn, complete, deliveries, loggedAttempts, register, WebhookWorld, workerAsleep } from "./support/WebhookWorld.js"
import { advance, loopsResting } from "./support/Advance.js"


/** A resolver that answers from a script, one answer per lookup, and counts the lookups. */
const scriptedResolver = (answers: ReadonlyArray<string>) => {
  let calls = 0
  const layer = Layer.succeed(Resolver, {
    resolve: () => {
      const address = answers[Math.min(calls, answers.length - 1)] ?? "127.0.0.1"
      calls++
      return Effect.succeed([{ address, family: address.includes(":") ? 6 as const : 4 as const }])
    }
  })
  return { layer, calls: () => calls }
}

describe("URL policy at delivery time", () => {
  it.effect("a host that rebinds from a public to a loopback address is refused at the attempt", () => {
    const dns = scriptedResolver(["93.184.216.34", "127.0.0.1"])
    return Effect.gen(function*() {
      yield* register("https://rebind.example/hook")
      expect(dns.calls()).toBe(1)
      yield* complete("srv_main")
      yield* advance("1 second")
      const [attempt] = yield* eventually(loggedAttempts, (all) => all.length === 1)
      expect(attempt).toMatchObject({ ok: 0, responseStatus: null, error: TARGET_REFUSED })
      // One lookup per attempt: the answer that was checked is the only one ever used.
      expect(dns.calls()).toBe(2)
    }).pipe(
      Effect.provide(WebhookWorld({}, undefined, { webhookAllowPrivateTargets: false }).pipe(Layer.provide(dns.layer))),
      Effect.scoped
    )
  })

  it.effect("connects to the checked address, keeping the Host header, without resolving again", () => {
    // Were the name resolved a second time, the second answer would lead nowhere.
    const dns = scriptedResolver(["127.0.0.1", "127.0.0.1", "192.0.2.1"])
    return Effect.gen(function*() {
      const target = yield* receiver()
      yield* register(`http://hooks.internal.test:${target.port}/hook`)
      yield* complete("srv_main")
      yield* advance("1 second")
      const [received] = yield* eventually(target.received, (all) => all.length === 1)
      expect(received?.host).toBe(`hooks.internal.test:${target.port}`)
      const [attempt] = yield* eventually(loggedAttempts, (all) => all.length === 1)
      expect(attempt).toMatchObject({ ok: 1, responseStatus: 200 })
      expect(dns.calls()).toBe(2)
    }).pipe(Effect.provide(WebhookWorld().pipe(Layer.provide(dns.layer))), Effect.scoped)
  })
})

describe("supervision and durability", () => {
  it.effect("the worker loop logs a defect, starts again a second later by the clock, and then delivers", () => {
    const failures = Effect.runSync(Queue.unbounded<string>())
    const recordFailures = Logger.add(Logger.make(({ message }) => {
      const text = Array.isArray(message) ? message.join(" ") : String(message)
      if (text.includes("failed; retrying")) Queue.unsafeOffer(failures, text)
    }))
    return Effect.gen(function*() {
      const target = yield* receiver()
      yield* register(target.url)
      const sql = yield* SqlClient.SqlClient
      // The start-up work (the purge's first run) is done before the table goes.
      yield* loopsResting
      // Pull the cursor table away: the next round of the loop dies before it claims anything.
      yield* sql`ALTER TABLE outbox_cursors RENAME TO outbox_cursors_away`
      const event = yield* complete("srv_main")
      const start = yield* TestClock.currentTimeMillis
      yield* advance("100 millis")
      expect(yield* Queue.take(failures)).toMatch(/^webhook delivery worker failed; retrying in 1s/)
      yield* sql`ALTER TABLE outbox_cursors_away RENAME TO outbox_cursors`
      yield* advance("1 second")
      const [delivered] = yield* target.receivedAtLeast(1)
      expect(delivered?.headers["webhook-id"]).toBe(event.id)
      // The loop came back one restart delay after the failure, not before.
      const [attempt] = yield* eventually(loggedAttempts, (all) => all.length === 1)
      expect(attempt?.attemptedAt).toBe(start + 1_100)
    }).pipe(Effect.provide(WebhookWorld().pipe(Layer.provide(recordFailures))), Effect.scoped)
  })

  it.live("an attempt that dies is returned to the queue and delivered by a later round", () => {
    let calls = 0
    const flakySigner = Layer.effect(
      Signer,
      Effect.map(Signer, (real) => ({
        newSecret: real.newSecret,
        sign: (input: Parameters<typeof real.sign>[0]) => {
          calls++
          return calls === 1 ? Effect.dieMessage("signer failure") : real.sign(input)
        }
      }))
    ).pipe(Layer.provide(Signer.StandardWebhooks))
    return Effect.gen(function*() {
      const target = yield* receiver()
      yield* register(target.url)
      const event = yield* complete("srv_main")
      const [delivered] = yield* eventually(target.received, (all) => all.length === 1)
      expect(delivered?.headers["webhook-id"]).toBe(event.id)
      expect(calls).toBe(2)
      const log = yield* eventually(loggedAttempts, (all) => all.length === 1)
      expect(log[0]?.ok).toBe(1)
    }).pipe(Effect.provide(WebhookWorld({}, flakySigner)), Effect.scoped)
  })

  it.effect("a delivery claimed by a worker that crashed is attempted again, with the same event id", () =>
    Effect.gen(function*() {
      const target = yield* receiver()
      yield* register(target.url)
      const event = yield* complete("srv_main")
      // Another worker fans out and claims the delivery, then dies without settling it.
      const worker = yield* Deliveries
      yield* worker.fanOut(0, 100)
      const claimed = yield* worker.claim({ now: 0, free: 10, perWebhook: 10, inFlight: new Map(), leaseMillis: 30_000 })
      expect(claimed.rows.map((c) => c.eventId)).toEqual([event.id])
      yield* advance("29 seconds")
      expect(claimedIn(yield* workerAsleep)).toBe(0)
      yield* advance("1 second")
      const [delivered] = yield* eventually(target.received, (all) => all.length === 1)
      expect(delivered?.headers["x-service-event-id"]).toBe(event.id)
      yield* eventually(deliveries, (all) => all[0]?.state === "delivered")
    }).pipe(
      Effect.provide(WebhookWorld({ pollInterval: Duration.seconds(1) })),
      Effect.scoped
    ))

  it.live("shutdown past the drain's grace interrupts an in-flight attempt and returns its delivery to the queue", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "webhook-shutdown-"))
      const databasePath = join(dir, "survey.db")
      const hanging = yield* receiver(() => new Promise<Response>(() => {}))
      const scope = yield* Scope.make()
      const world = WebhookWorld({}, undefined, { databasePath }).pipe(
        Layer.provide(Layer.succeed(DrainSettings, { grace: Duration.zero }))
      )
      const context = yield* Layer.buildWithScope(world, scope)
      yield* Effect.gen(function*() {
        yield* register(hanging.url)
        yield* complete("srv_main")
        yield* eventually(hanging.received, (all) => all.length === 1)
        const [inFlight] = yield* deliveries
        expect(inFlight?.leaseUntil).toBeGreaterThan(0)
      }).pipe(Effect.provide(context))
      yield* Scope.close(scope, Exit.void)
      const afterwards = Effect.provideService(AppConfig, Context.get(context, AppConfig))
      const rows = yield* afterwards(elsewhereRows("SELECT state, attempts, lease_until FROM deliveries"))
      const attempts = yield* afterwards(elsewhereRows("SELECT COUNT(*) AS n FROM delivery_attempts"))
      expect(rows).toEqual([{ state: "pending", attempts: 0, leaseUntil: 0 }])
      expect(attempts).toEqual([{ n: 0 }])
    }).pipe(Effect.scoped))
})

describe("attempt log retention", () => {
  it.effect("the periodic purge deletes attempts older than 30 days", () =>
    Effect.gen(function*() {
      const repo = yield* WebhookRepo
      const attempt = (eventId: string, attemptedAt: number) =>
        repo.recordAttempt({
          deliveryId: null,
          scope: "workspace",
          workspaceId: "ws_a",
          surveyId: null,
          eventId,
          eventType: "webhook.test",
          ok: true,
          responseStatus: 200,
          error: null,
          attemptedAt
        }).pipe(Effect.orDie)
      yield* attempt("evt_old", 0)
      yield* advance("20 days")
      yield* attempt("evt_recent", yield* TestClock.currentTimeMillis)
      yield* advance("10 days")
      expect((yield* loggedAttempts).map((a) => a.eventId)).toEqual(["evt_old", "evt_recent"])
      yield* advance("1 day")
      expect((yield* loggedAttempts).map((a) => a.eventId)).toEqual(["evt_recent"])
      yield* advance("20 days")
      expect(yield* loggedAttempts).toEqual([])
    }).pipe(Effect.provide(WebhookWorld({ pollInterval: Duration.days(1), purgeInterval: Duration.days(1) })),
      Effect.scoped
    ))
})
