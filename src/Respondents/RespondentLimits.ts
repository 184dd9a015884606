import { HttpServerRequest } from "@effect/platform"
import { Clock, Effect } from "effect"
import { AppConfig, DEFAULT_RESPONDENT_LIMITS } from "../Config.js"
import { RateLimited } from "../Domain/Errors.js"
import { clientAddress, trustedProxies } from "../Http/ClientAddress.js"
import { addAnswerHeaders } from "../Http/RequestId.js"
import { UsageCounters } from "../Quota/UsageCounters.js"
import { type AdmissionEntries, makeAdmissions, retryAfterSeconds } from "./AdmissionTable.js"

/**
 * Limits on the public respondent paths (`/s/{surveyId}`, `/embed/{token}`, `/respond/v1`): so
 * many requests per client address and per survey a minute (src/Respondents/AdmissionTable.ts).
 * Kept in this process's memory, nothing per visitor in the database: each table holds a fixed
 * number of entries, the least recently seen going first, and each process counts on its own.
 * A survey past its limit still admits an address under its fair share (`FAIR_SHARE_DIVISOR`), so
 * that a few heavy addresses cannot close a survey for everyone.
 */
export class RespondentLimits extends Effect.Service<RespondentLimits>()("Respondents/RespondentLimits", {
  effect: Effect.gen(function*() {
    const config = yield* AppConfig
    const counters = yield* UsageCounters
    const admissions = makeAdmissions({
      perAddress: config.respondentLimitPerAddress ?? DEFAULT_RESPONDENT_LIMITS.perAddress,
      perSurvey: config.respondentLimitPerSurvey ?? DEFAULT_RESPONDENT_LIMITS.perSurvey,
      capacity: config.respondentLimitEntries ?? DEFAULT_RESPONDENT_LIMITS.entries
    })
    const proxies = trustedProxies(config.trustedProxies ?? [])

    // On every public request's path: no span of its own, the request's span covers it.
    const decided = (wait: number, what: string): Effect.Effect<void, RateLimited> => {
      if (wait === 0) return Effect.void
      const seconds = retryAfterSeconds(wait)
      return Effect.zipRight(
        addAnswerHeaders({ "retry-after": String(seconds) }),
        Effect.fail(new RateLimited({ message: `Too many requests ${what}; retry in ${seconds} s.`, retryAfterSeconds: seconds }))
      )
    }
    const withAddress = <A>(f: (address: string, now: number) => Effect.Effect<A, RateLimited>) =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => f(clientAddress(request, proxies) ?? "unknown", now)))

    return {
      /** Counts the request against its client address, or refuses it (429, with `Retry-After`). */
      address: withAddress((address, now) => decided(admissions.address(address, now), "from this address")),
      /**
       * Counts the request against a survey that exists, or refuses it (429, with `Retry-After`);
       * past the survey's limit, an address under its fair share is still admitted.
       */
      survey: (surveyId: string) =>
        withAddress((address, now) => decided(admissions.survey(surveyId, address, now), "for this survey")),
      /** How many entries the tables hold. */
      entries: Effect.sync((): AdmissionEntries => admissions.entries()),
      /**
       * Drops the entries whose allowance is whole again, and deletes the stored respondent counts
       * earlier versions kept in the request quota's store. Answers how many stored rows went.
       */
      forget: Effect.flatMap(Clock.currentTimeMillis, (now) => {
        admissions.sweep(now)
        return counters.forget("respondent-", now, now - 60_000)
      }).pipe(Effect.withSpan("RespondentLimits.forget"))
    } as const
  })
}) {}
