import { describe, expect, layer } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { UsageStore } from "../src/Quota/UsageStore.js"
import { onOutside, outsideConnection, waitingOrDone } from "./support/OutsideConnection.js"
import { testDatabase, TestDatabase } from "./support/TestServer.js"

// Processes settle batches of several counters at once (an address's and a survey's, for the
// respondent limits): each must lock them in one order, or two batches deadlock.
describe.skipIf(testDatabase !== "postgres")("quota counters locked in one order", () => {
  layer(TestDatabase())((it) => {
    it.scoped("a batch listing b before a locks a first", () =>
      Effect.gen(function*() {
        const store = yield* UsageStore
        const holder = yield* outsideConnection
        const prober = yield* outsideConnection
        const observer = yield* outsideConnection
        yield* onOutside(holder, `INSERT INTO usage_daily (account_id, day, count) VALUES ('lock-a', '1970-01-01', 0), ('lock-b', '1970-01-01', 0)`)
        // Another process holds b.
        yield* onOutside(holder, "BEGIN")
        yield* onOutside(holder, "SELECT count FROM usage_daily WHERE account_id = 'lock-b' FOR UPDATE")
        const settling = yield* Effect.fork(store.settle(0, [{ accountId: "lock-b", windowMs: 60_000 }, {
          accountId: "lock-a",
          windowMs: 60_000
        }], { current: () => true, decide: () => [] }))
        yield* waitingOrDone(observer, settling)
        // Blocked on b, the batch already holds a: another process cannot take a meanwhile.
        const probe = yield* Effect.promise(() =>
          prober.query("SELECT count FROM usage_daily WHERE account_id = 'lock-a' FOR UPDATE NOWAIT").then(() => "free", () => "held")
        )
        yield* onOutside(holder, "COMMIT")
        yield* Fiber.join(settling)
        expect(probe).toBe("held")
      }))
  })
})
