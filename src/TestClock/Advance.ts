import { Clock, Effect } from "effect"
import { RoundGate } from "../Background/Jobs.js"
import { BackgroundJobs } from "../BackgroundJobs.js"
import { SimulatedClock } from "./SimulatedClock.js"

/** What one advance did. */
export interface Advanced {
  readonly now: number
  readonly deliveryAttempts: number
  readonly jobsRun: number
}

/**
 * Moves the simulated clock forward through what the background jobs (src/BackgroundJobs.ts)
 * would have done on the way (v1-extensions §X5.1). With the loops' rounds held back, at each
 * instant it visits, it runs the round of every job due then (a delivery attempt is made for real
 * and recorded, its retry scheduled from that instant), and only then moves to the next instant
 * where a job falls due, up to the target, where it does the same. A job that catches up (a purge
 * deletes by age whatever runs before it would have) runs at the instants visited anyway, rather
 * than at each of its own due times: a 400-day advance stays a matter of seconds. One advance at a time.
 */
export class ClockAdvance extends Effect.Service<ClockAdvance>()("TestClock/ClockAdvance", {
  effect: Effect.gen(function*() {
    const simulated = yield* SimulatedClock
    const { jobs } = yield* BackgroundJobs
    const gate = yield* RoundGate

    /** The round of every job due at `now`: what they did, and the next instant after `now` one is due. */
    const runDue = (now: number) =>
      Effect.gen(function*() {
        let deliveryAttempts = 0
        let jobsRun = 0
        let next: number | null = null
        for (const job of jobs) {
          let coming = yield* job.dueAt(now)
          if (coming !== null && coming <= now) {
            const round = yield* Effect.orDie(job.round)
            deliveryAttempts += round.deliveryAttempts
            jobsRun++
            coming = round.nextDue
          }
          if (!job.catchesUp && coming !== null && coming > now && (next === null || coming < next)) next = coming
        }
        return { deliveryAttempts, jobsRun, next }
      })

    /** Moves the clock to `target` (Clock millis, not before now), running everything due up to it. */
    const advanceTo = (target: number) =>
      Effect.gen(function*() {
        let now = yield* Clock.currentTimeMillis
        let deliveryAttempts = 0
        let jobsRun = 0
        while (true) {
          const done = yield* runDue(now)
          deliveryAttempts += done.deliveryAttempts
          jobsRun += done.jobsRun
          if (now >= target) break
          now = done.next === null ? target : Math.min(done.next, target)
          yield* simulated.setTo(now)
        }
        return { now: yield* Clock.currentTimeMillis, deliveryAttempts, jobsRun } satisfies Advanced
      }).pipe(gate.alone, Effect.withSpan("ClockAdvance.advanceTo"))

    return { advanceTo } as const
  })
}) {}
