import { HttpServerRequest } from "@effect/platform"
import { Clock, Effect, Option } from "effect"
import { isIP } from "node:net"
import type { QuotaPlan } from "../Auth/CurrentKey.js"
import { AppConfig, DEFAULT_RESPONDENT_LIMITS } from "../Config.js"
import { RateLimited, type ServiceUnavailable } from "../Domain/Errors.js"
import { addAnswerHeaders } from "../Http/RequestId.js"
import { makeRateLimiterWith } from "../Quota/RateLimiter.js"
import { UsageStore } from "../Quota/UsageStore.js"

/** The first four groups of an IPv6 address (its /64 network), expanded; undefined when it is not one. */
const ipv6Network = (address: string): string | undefined => {
  const [head = "", tail, extra] = address.split("%")[0]?.split("::") ?? []
  if (extra !== undefined) return undefined
  const groups = (part: string | undefined) =>
    part === undefined || part === "" ? [] : part.split(":").flatMap((g) => g.includes(".") ? ["0", "0"] : [g])
  const left = groups(head)
  const right = groups(tail)
  const missing = 8 - left.length - right.length
  if (missing < 0 || (tail === undefined && missing !== 0)) return undefined
  const full = [...left, ...Array.from({ length: missing }, () => "0"), ...right]
  return full.slice(0, 4).map((g) => parseInt(g, 16).toString(16)).join(":")
}

/**
 * The counter of a client address: an IPv4 address as it is (an IPv4-mapped IPv6 address as its
 * IPv4 address), an IPv6 address by its /64 network, which one subscriber typically holds whole.
 */
export const addressKey = (address: string): string | undefined => {
  const trimmed = address.trim()
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(trimmed)?.[1]
  if (mapped !== undefined && isIP(mapped) === 4) return mapped
  if (isIP(trimmed) === 4) return trimmed
  const bare = trimmed.startsWith("[") && trimmed.endsWith("]") ? trimmed.slice(1, -1) : trimmed
  if (isIP(bare.split("%")[0] ?? "") !== 6) return undefined
  const network = ipv6Network(bare)
  return network === undefined ? undefined : `${network}::/64`
}

/**
 * The client's address: the connection's, or behind `hops` reverse proxies the `hops`-th entry of
 * `X-Forwarded-For` from the right (the one the outermost trusted proxy appended: what it saw
 * connect), or its left-most entry when the list is shorter. Entries further left are the
 * client's own claims and are never used. An entry that is not an IP address counts as none.
 */
export const clientAddress = (request: HttpServerRequest.HttpServerRequest, hops: number): string | undefined => {
  const remote = Option.getOrUndefined(request.remoteAddress)
  if (hops <= 0) return remote === undefined ? undefined : addressKey(remote)
  const entries = (request.headers["x-forwarded-for"] ?? "").split(",").map((e) => e.trim()).filter((e) => e !== "")
  const entry = entries.length === 0 ? undefined : entries[Math.max(0, entries.length - hops)]
  const forwarded = entry === undefined ? undefined : addressKey(entry)
  return forwarded ?? (remote === undefined ? undefined : addressKey(remote))
}

/** A respondent limit's plan: `limit` requests a minute, no daily or monthly bound. */
export const perMinute = (limit: number): QuotaPlan => ({
  planId: "respondent",
  burstLimit: limit,
  burstWindowMinutes: 1,
  dailyLimit: Number.MAX_SAFE_INTEGER,
  monthlyLimit: Number.MAX_SAFE_INTEGER
})

/**
 * Limits on the public respondent paths (`/s/{surveyId}`, `/embed/{token}`, `/respond/v1`): so
 * many requests per client address and per survey in any minute. Counted in the request quota's
 * store (src/Quota/UsageStore.ts) by a limiter of its own, so every process on the database holds
 * the limits together; requests are counted at the start of their second.
 */
export class RespondentLimits extends Effect.Service<RespondentLimits>()("Respondents/RespondentLimits", {
  effect: Effect.gen(function*() {
    const config = yield* AppConfig
    const store = yield* UsageStore
    // An address's counters are read again from the store when they come back after 10,000 others.
    const limiter = yield* makeRateLimiterWith({ answerHeaders: false, stepMs: 1000, maxKnown: 10_000 })
    const addressPlan = perMinute(config.respondentLimitPerAddress ?? DEFAULT_RESPONDENT_LIMITS.perAddress)
    const surveyPlan = perMinute(config.respondentLimitPerSurvey ?? DEFAULT_RESPONDENT_LIMITS.perSurvey)
    const hops = config.trustProxyHops ?? 0

    const admit = (accountId: string, quota: QuotaPlan, what: string) =>
      Effect.catchTag(limiter.admit({ accountId, quota }), "RateLimited", (refused) =>
        Effect.zipRight(
          addAnswerHeaders({ "retry-after": String(refused.retryAfterSeconds) }),
          Effect.fail(
            new RateLimited({
              message: `Too many requests ${what}; retry in ${refused.retryAfterSeconds} s.`,
              retryAfterSeconds: refused.retryAfterSeconds
            })
          )
        ))

    return {
      /** Counts the request against its client address, or refuses it (429, with `Retry-After`). */
      address: Effect.flatMap(
        HttpServerRequest.HttpServerRequest,
        (request): Effect.Effect<void, RateLimited | ServiceUnavailable, HttpServerRequest.HttpServerRequest> =>
          admit(`respondent-address:${clientAddress(request, hops) ?? "unknown"}`, addressPlan, "from this address")
      ),
      /** Counts the request against a survey that exists, or refuses it (429, with `Retry-After`). */
      survey: (surveyId: string) => admit(`respondent-survey:${surveyId}`, surveyPlan, "for this survey"),
      /** Deletes the stored counts that no longer count (earlier days, stamps older than a minute). */
      forget: Effect.flatMap(Clock.currentTimeMillis, (now) => store.forget("respondent-", now, now - 60_000)).pipe(
        Effect.withSpan("RespondentLimits.forget")
      )
    } as const
  })
}) {}
