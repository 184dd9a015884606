import { Clock, Duration, Effect, Option } from "effect"
import { Aggregator } from "../Analytics/Aggregator.js"
import { leaseMillisOf } from "../Background/JobLeases.js"
import { AppConfig } from "../Config.js"
import { Idempotency } from "../Http/Idempotency.js"
import { RespondentLimits } from "../Respondents/RespondentLimits.js"
import { RespondentPurge } from "../Respondents/RespondentPurge.js"
import { DeliveryRepo, type Settled } from "../Webhooks/DeliveryRepo.js"
import { DeliverySettings } from "../Webhooks/DeliverySettings.js"
import { attemptDelivery } from "../Webhooks/DeliveryWorker.js"
import { purgeOnce } from "../Webhooks/Purge.js"
import { Redelivery } from "../Webhooks/Redelivery.js"
import { Signer } from "../Webhooks/Signer.js"
import { WebhookRepo } from "../Webhooks/WebhookRepo.js"
import { nextAttemptAfterOf } from "./DueWorkRepo.js"
import { SimulatedClock } from "./SimulatedClock.js"

/** What one advance did. */
export interface Advanced {
  readonly now: number
  readonly deliveryAttempts: number
  readonly jobsRun: number
}

const HOUR = 3_600_000

/**
 * Moves the simulated clock forward, running on the way what the background loops would have
 * run (v1-extensions §X5.1): the clock steps to each instant where a delivery attempt falls due,
 * what is due there runs (attempts for real over HTTP, outcomes recorded, retries scheduled from
 * that instant), and only then does the clock move on. The periodic jobs (purges of what is past
 * its retention) run at those instants and at the target, at most once per period: a purge
 * deletes whatever runs before it would have deleted, so stepping to each hour of a 400-day
 * advance would only repeat statements. Jobs that follow changes as they come (the aggregator,
 * the layout sweep) run at the start of an advance: between advances the clock stood still, and
 * nothing on the way writes changes. One advance at a time.
 */
export class ClockAdvance extends Effect.Service<ClockAdvance>()("TestClock/ClockAdvance", {
  effect: Effect.gen(function*() {
    const { aggregator, deliveries, idempotency, respondentLimits, respondentPurge, settings, simulated } = yield* Effect.all({
      simulated: SimulatedClock,
      deliveries: DeliveryRepo,
      settings: DeliverySettings,
      aggregator: Aggregator,
      respondentPurge: RespondentPurge,
      respondentLimits: RespondentLimits,
      idempotency: Idempotency
    })
    const leaseMillis = leaseMillisOf(yield* AppConfig)
    const context = yield* Effect.context<DeliveryRepo | Signer | AppConfig | WebhookRepo | Redelivery>()
    const nextAttemptAfter = yield* nextAttemptAfterOf
    const lock = yield* Effect.makeSemaphore(1)

    // The periodic jobs at their production periods, each next due at its instant (all at the first advance).
    const periodic: ReadonlyArray<{ readonly name: string; readonly periodMillis: number; readonly run: Effect.Effect<unknown, unknown> }> = [
      { name: "webhook attempt purge", periodMillis: Duration.toMillis(settings.purgeInterval), run: Effect.provide(purgeOnce, context) },
      { name: "respondent token purge", periodMillis: HOUR, run: Effect.zip(respondentPurge.run(), respondentLimits.forget) },
      { name: "idempotency key purge", periodMillis: HOUR, run: idempotency.prune() }
    ]
    const nextRunAt = new Map<string, number>(periodic.map((job) => [job.name, Number.NEGATIVE_INFINITY]))

    /**
     * Every attempt due at `now`, in due order, until none is left; answers how many were made,
     * and when the first attempt held back by its webhook's rate (v1-extensions §X5.3) may be made.
     */
    const attemptsDue = (now: number) =>
      Effect.gen(function*() {
        while ((yield* deliveries.fanOut(now, settings.batch)) >= settings.batch) {
          // A full batch fanned out: more events may be waiting.
        }
        let made = 0
        while (true) {
          const { heldUntil, rows } = yield* deliveries.claim({
            now,
            free: settings.maxConcurrent,
            perWebhook: settings.perWebhook,
            inFlight: new Map(),
            leaseMillis
          })
          if (rows.length === 0) return { made, heldUntil }
          const settled = yield* Effect.forEach(rows, attemptDelivery, { concurrency: "unbounded" })
          yield* deliveries.settle(settled.flatMap((s): ReadonlyArray<Settled> => Option.toArray(s)))
          made += settled.filter(Option.isSome).length
        }
      })

    /** The jobs due at `now`; answers how many ran. */
    const jobsDue = (now: number) =>
      Effect.gen(function*() {
        let ran = 0
        for (const job of periodic) {
          if ((nextRunAt.get(job.name) ?? 0) > now) continue
          yield* Effect.orDie(job.run)
          nextRunAt.set(job.name, now + job.periodMillis)
          ran++
        }
        return ran
      })

    /** Moves the clock to `target` (Clock millis, not before now), running everything due up to it. */
    const advanceTo = (target: number) =>
      Effect.gen(function*() {
        let attempts = 0
        let jobs = 0
        yield* Effect.orDie(aggregator.catchUp())
        yield* Effect.orDie(aggregator.sweepLayouts())
        jobs += 2
        let now = yield* Clock.currentTimeMillis
        while (true) {
          jobs += yield* jobsDue(now)
          const { heldUntil, made } = yield* attemptsDue(now)
          attempts += made
          const due = yield* nextAttemptAfter(now)
          // An attempt held back by its webhook's rate is due again when its slot opens.
          const held = heldUntil === null ? null : Math.max(Math.ceil(heldUntil), now + 1)
          const next = due === null ? held : held === null ? due : Math.min(due, held)
          if (next === null || next > target) break
          yield* simulated.setTo(next)
          now = next
        }
        if (target > now) {
          yield* simulated.setTo(target)
          jobs += yield* jobsDue(target)
          attempts += (yield* attemptsDue(target)).made
        }
        return { now: yield* Clock.currentTimeMillis, deliveryAttempts: attempts, jobsRun: jobs } satisfies Advanced
      }).pipe(Effect.provide(context), lock.withPermits(1), Effect.withSpan("ClockAdvance.advanceTo"))

    return { advanceTo } as const
  })
}) {}
