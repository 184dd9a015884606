import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import type * as Pg from "pg"
import { onOutside, outsideConnection, serviceLockWaiters } from "./support/OutsideConnection.js"
import { testDatabase } from "./support/TestServer.js"
import { eventually, receiver } from "./support/WebhookReceiver.js"
import { complete, deliveries, loggedAttempts, register, WebhookWorld, workerAsleep } from "./support/WebhookWorld.js"
import { advance } from "./support/Advance.js"

/** Until one of the service's connections waits for a lock. */
const serviceBlocked = (observer: Pg.Client) => eventually(serviceLockWaiters(observer), (waiters) => waiters >= 1)

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

      // The poll's round is held up in its first query (another process moves the outbox
      // cursor) while five minutes pass; it then finds the retry due ten minutes after its start.
      const holder = yield* outsideConnection
      const observer = yield* outsideConnection
      yield* onOutside(holder, "BEGIN")
      yield* onOutside(holder, "SELECT last_seq FROM outbox_cursors WHERE name = 'webhooks' FOR UPDATE")
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

