import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import type { QuotaPlan } from "../src/Auth/CurrentKey.js"
import { AccountUsage } from "../src/Quota/AccountUsage.js"
import { utcDay, utcMonth } from "../src/Quota/Calendar.js"

/** The rules of decisions §3 written the slow, obvious way: a request fits if every limit has room. */
const reference = (plan: QuotaPlan, admitted: ReadonlyArray<number>, at: number) => {
  const windowMs = plan.burstWindowMinutes * 60_000
  const inBurst = admitted.filter((t) => t > at - windowMs && t <= at).length
  const today = admitted.filter((t) => utcDay(t) === utcDay(at)).length
  const thisMonth = admitted.filter((t) => utcMonth(t) === utcMonth(at)).length
  return {
    fits: inBurst < plan.burstLimit && today < plan.dailyLimit && thisMonth < plan.monthlyLimit,
    remainingAfter: Math.max(
      0,
      Math.min(plan.burstLimit - inBurst - 1, plan.dailyLimit - today - 1, plan.monthlyLimit - thisMonth - 1)
    )
  }
}

const planArb = fc.record({
  planId: fc.constant("p"),
  burstLimit: fc.integer({ min: 1, max: 8 }),
  burstWindowMinutes: fc.integer({ min: 1, max: 3 }),
  dailyLimit: fc.integer({ min: 1, max: 25 }),
  monthlyLimit: fc.integer({ min: 1, max: 60 })
})
// Starts late in a month so that runs cross day and month ends; gaps from 0 to about 7 hours.
const startArb = fc.integer({ min: 0, max: 48 }).map((m) => Date.UTC(2024, m, 1) - 2 * 86_400_000)
const gapsArb = fc.array(fc.integer({ min: 0, max: 25_000_000 }), { minLength: 1, maxLength: 80 })

describe("AccountUsage", () => {
  it.prop("admits exactly what the rules allow; Retry-After is the least whole wait that frees the request", [
    planArb,
    startArb,
    gapsArb
  ], ([plan, start, gaps]) => {
    const usage = new AccountUsage({ dayCount: 0, monthCount: 0, burst: [] }, start)
    const admitted: Array<number> = []
    let now = start
    for (const gap of gaps) {
      now += gap
      const expected = reference(plan, admitted, now)
      const decision = usage.take(now, plan)
      expect(decision._tag).toBe(expected.fits ? "Admitted" : "Limited")
      if (decision._tag === "Admitted") {
        expect(decision.headers.remaining).toBe(expected.remainingAfter)
        admitted.push(now)
      } else {
        expect(decision.retryAfterSeconds).toBeGreaterThanOrEqual(1)
        expect(reference(plan, admitted, now + decision.retryAfterSeconds * 1000).fits).toBe(true)
        if (decision.retryAfterSeconds > 1) {
          expect(reference(plan, admitted, now + (decision.retryAfterSeconds - 1) * 1000).fits).toBe(false)
        }
      }
    }
  })
})
