import { HttpApiBuilder } from "@effect/platform"
import { Clock, Effect } from "effect"
import { Api } from "../Api.js"
import { CurrentKey } from "../Auth/CurrentKey.js"
import { toIso } from "../Domain/Time.js"
import { preEncoded } from "../Http/PreEncoded.js"
import { Usage } from "./Api.js"
import { nextUtcMidnight } from "./Calendar.js"
import { RateLimiter } from "./RateLimiter.js"

export const UsageLive = HttpApiBuilder.group(Api, "usage", (handlers) =>
  Effect.gen(function*() {
    const limiter = yield* RateLimiter
    /**
     * Measured shortcut: a chain of effects answering its wire form (`preEncoded`: the numbers are
     * the key's plan's and the stored count, integers already), skipping a generator per request
     * and the Schema encoding; and the day's count only, skipping the sums over every request of
     * the month and of the burst window, which the answer does not show (test/Quota.test.ts,
     * test/WireEncoding.test.ts). Measurement: docs/performance.md#measured-shortcuts, "Chains of
     * effects", "Pre-encoded bodies" and "`/usage` from the day's count".
     */
    return handlers.handle("get", () =>
      Effect.flatMap(Effect.zip(CurrentKey, Clock.currentTimeMillis), ([key, now]) =>
        Effect.map(limiter.usedToday(key, now), (usedToday) => preEncoded(Usage, {
          burstLimit: key.quota.burstLimit,
          burstWindowMinutes: key.quota.burstWindowMinutes,
          dailyLimit: key.quota.dailyLimit,
          usedToday,
          remainingToday: Math.max(0, key.quota.dailyLimit - usedToday),
          monthlyLimit: key.quota.monthlyLimit,
          resetAt: toIso(nextUtcMidnight(now))
        }))))
  })
)
