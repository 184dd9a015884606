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
    // A chain of effects, not a generator (docs/architecture.md#chains-of-effects-not-generators),
    // answering its wire form (docs/architecture.md#pre-encoded-bodies): the numbers are the key's
    // plan's and the stored count, integers already.
    // The answer shows the day's count only: reading the month and the burst window as well
    // would cost a sum over every request of the window (docs/performance.md, `/usage`).
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
