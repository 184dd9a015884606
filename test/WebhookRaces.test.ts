import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Option, Schema, TestClock } from "effect"
import type * as Pg from "pg"
import { Deliveries } from "../src/Webhooks/Deliveries.js"
import { baseFixture } from "./support/Fixtures.js"
import { onOutside, openEventWrite, outsideConnection, serviceLockWaiters, waitingOrDone } from "./support/OutsideConnection.js"
import { decodeAs, testDatabase, TestServer } from "./support/TestServer.js"
import { eventually, receiver } from "./support/WebhookReceiver.js"
import { complete, deliveries, loggedAttempts, register, WebhookWorld, workerAsleep } from "./support/WebhookWorld.js"
import { advance } from "./support/Advance.js"

/** Until one of the service's connections waits for a lock. */
const serviceBlocked = (observer: Pg.Client) => eventually(serviceLockWaiters(observer), (waiters) => waiters >= 1)

/** The events fanned out to a webhook, in event order. */
const deliveredEvents = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`SELECT event_id FROM deliveries ORDER BY event_seq`.pipe(Effect.orDie)
  return decodeAs(Schema.Array(Schema.Struct({ eventId: Schema.String })), rows).map((row) => row.eventId)
})

// PostgreSQL only: there the worker's queries wait on the network, so time passes during a round
// (a test clock moved meanwhile stands for it). On SQLite a round's queries answer at once.
describe.runIf(testDatabase === "postgres")("the delivery worker on PostgreSQL", () => {
  it.effect("a round during which time passes still sleeps until the due time it found, not that much later", () =>
    Effect.gen(function*() {
      // The first attempt asks for a retry in 30 minutes; the outbox is polled every 20.
      let answer = () => new Response("", { status: 429, headers: { "retry-after": "1800" } })
      const target = yield* receiver(() => answer())
      yield* register(target.url)
      yield* complete("srv_main")
      yield* advance("20 minutes")
      yield* eventually(deliveries, (all) => all[0]?.attempts === 1 && all[0].leaseUntil === 0)
      answer = () => new Response("ok")
      const [delivery] = yield* deliveries
      if (delivery === undefined) return yield* Effect.dieMessage("no delivery")
      const due = delivery.nextAttemptAt
      const { sleepUntil: poll } = yield* workerAsleep
      expect(poll).toBeLessThan(due)

      // The poll's round is held up in its first query (another session holds the deliveries
      // table) while five minutes pass; it then finds the retry due ten minutes after its start.
      const holder = yield* outsideConnection
      const observer = yield* outsideConnection
      yield* onOutside(holder, "BEGIN")
      yield* onOutside(holder, "LOCK TABLE deliveries IN ACCESS EXCLUSIVE MODE")
      yield* TestClock.setTime(poll)
      yield* serviceBlocked(observer)
      yield* TestClock.setTime(poll + Duration.toMillis(Duration.minutes(5)))
      yield* onOutside(holder, "COMMIT")
      const asleep = yield* workerAsleep
      expect(asleep.rounds.map((round) => round.at)).toContain(poll)
      expect(asleep.sleepUntil).toBe(due)

      // The retry comes at its due time.
      yield* advance(Duration.millis(due - (yield* TestClock.currentTimeMillis)))
      const log = yield* eventually(loggedAttempts, (all) => all.length === 2)
      expect(log[1]).toMatchObject({ ok: 1, attemptedAt: due })
    }).pipe(Effect.scoped, Effect.provide(WebhookWorld({ pollInterval: Duration.minutes(20) }))))
})

// PostgreSQL only: there an event is numbered when it is inserted and its transaction may commit
// after a later-numbered one. On SQLite writers take turns, so the order cannot be built.
describe.runIf(testDatabase === "postgres")("a webhook registered while an event is being written, on PostgreSQL", () => {
  it.effect("receives every event committed after its registration, and none committed before", () =>
    Effect.gen(function*() {
      const holder = yield* outsideConnection
      const observer = yield* outsideConnection
      // A completion's transaction has written its event and not yet committed...
      yield* openEventWrite(holder, "evt_open")
      // ...while a later-numbered one commits.
      yield* complete("srv_main")
      // The webhook is registered meanwhile; the open event commits once the registration
      // has answered or waits for it.
      const registering = yield* Effect.fork(register("http://127.0.0.1:9/hook"))
      yield* waitingOrDone(observer, registering)
      const registeredFirst = Option.isSome(yield* Fiber.poll(registering))
      yield* onOutside(holder, "COMMIT")
      yield* Fiber.join(registering)
      const later = yield* complete("srv_main", "ws_a", "rsp_2")

      yield* (yield* Deliveries).fanOut(0, 100)
      // The open event committed after the registration only if the registration answered first.
      expect(yield* deliveredEvents).toEqual(registeredFirst ? ["evt_open", later.id] : [later.id])
      // Here the registration waits for the open event: that event predates the webhook.
      expect(registeredFirst).toBe(false)
    }).pipe(Effect.scoped, Effect.provide(TestServer(baseFixture))))
})
