import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { CurrentKey } from "../Auth/CurrentKey.js"
import { toIso } from "../Domain/Time.js"
import { RateLimiter } from "./RateLimiter.js"

export const UsageLive = HttpApiBuilder.group(Api, "usage", (handlers) =>
  Effect.gen(function*() {
    const limiter = yield* RateLimiter
    // A chain of effects, not a generator (docs/architecture.md#chains-of-effects-not-generators).
    return handlers.handle("get", () =>
      Effect.map(Effect.flatMap(CurrentKey, (key) => limiter.usage(key)), (report) => ({
        burstLimit: report.burstLimit,
        burstWindowMinutes: report.burstWindowMinutes,
        dailyLimit: report.dailyLimit,
        usedToday: report.usedToday,
        remainingToday: report.remainingToday,
        monthlyLimit: report.monthlyLimit,
        resetAt: toIso(report.resetAt)
      })))
  })
)
