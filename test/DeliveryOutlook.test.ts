import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect } from "effect"
import { Deliveries } from "../src/Webhooks/Deliveries.js"
import { DeliveryRepo } from "../src/Webhooks/DeliveryRepo.js"
import { baseFixture } from "./support/Fixtures.js"
import { TestServer } from "./support/TestServer.js"
import { complete, register } from "./support/WebhookWorld.js"

// The delivery worker's idle round is this one statement (src/Webhooks/DeliveryWorker.ts): the
// fan-out and the claim run only when it finds something for them.
describe("the delivery worker's outlook", () => {
  it.effect("sees events past the fan-out cursor, deliveries due now, and when the next one may be claimed after now", () =>
    Effect.gen(function*() {
      const repo = yield* DeliveryRepo
      const deliveries = yield* Deliveries
      const now = yield* Clock.currentTimeMillis
      yield* deliveries.fanOut(now, 1000)
      expect(yield* repo.outlook(now)).toEqual({ eventsWaiting: false, dueNow: false, wakeAt: null })

      yield* register("http://127.0.0.1:9/hook")
      yield* complete("srv_main")
      expect(yield* repo.outlook(now)).toEqual({ eventsWaiting: true, dueNow: false, wakeAt: null })

      expect(yield* deliveries.fanOut(now, 1000)).toBeGreaterThan(0)
      // Due now, and nothing coming after it.
      expect(yield* repo.outlook(now)).toEqual({ eventsWaiting: false, dueNow: true, wakeAt: null })
      // Not yet due at an earlier time: it is due at `now`.
      expect(yield* repo.outlook(now - 1)).toEqual({ eventsWaiting: false, dueNow: false, wakeAt: now })

      const { rows } = yield* deliveries.claim({ now, free: 64, perWebhook: 16, inFlight: new Map(), leaseMillis: 30_000 })
      expect(rows.length).toBeGreaterThan(0)
      // Leased: nothing due, and claimable again when the leases run out.
      expect(yield* repo.outlook(now)).toEqual({ eventsWaiting: false, dueNow: false, wakeAt: now + 30_000 })
    }).pipe(Effect.provide(TestServer(baseFixture))))
})
