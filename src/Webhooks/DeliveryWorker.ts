import { Chunk, Clock, Deferred, Duration, Effect, FiberSet, Layer, Metric, Option, Queue } from "effect"
import { Drain } from "../Background/Drain.js"
import { leaseMillisOf, releaseOrLapse } from "../Background/JobLeases.js"
import { type BackgroundJob, processJob, RoundGate, runJob, runJobs } from "../Background/Jobs.js"
import { parked, waiting, working } from "../Background/LoopRounds.js"
import { realTimeMillis } from "../Background/RealTime.js"
import { registerLoop, supervise } from "../Background/Supervise.js"
import { AppConfig } from "../Config.js"
import { oldestDueDeliveryAge, outboxDepth } from "../Telemetry/Metrics.js"
import { attemptOnce } from "./Attempt.js"
import { honouredSecrets } from "../Domain/Webhook.js"
import { Deliveries } from "./Deliveries.js"
import { type ClaimedDelivery, DeliveryRepo, type Settled } from "./DeliveryRepo.js"
import { DeliveryRounds, DeliverySettings } from "./DeliverySettings.js"
import { nextAttemptAt } from "./RetrySchedule.js"
import type { AttemptOutcome } from "./Sender.js"
import type { Signer } from "./Signer.js"
import { Slots } from "./Slots.js"

/** One attempt of a claimed delivery and where the retry schedule moves it; none once its webhook is gone. */
export const attemptDelivery = Effect.fn("DeliveryWorker.attempt")(function*(row: ClaimedDelivery) {
  const repo = yield* DeliveryRepo
  if (Option.isNone(row.target)) {
    yield* repo.drop(row.id)
    return Option.none<Settled>()
  }
  const target = row.target.value
  const attemptedAt = yield* Clock.currentTimeMillis
  const outcome: AttemptOutcome = yield* attemptOnce({
    targetUrl: target.url,
    secrets: honouredSecrets(target.secret, target.previousSecrets, attemptedAt),
    eventId: row.eventId,
    body: row.payload
  })
  const finishedAt = yield* Clock.currentTimeMillis
  const next: Settled["next"] = outcome.ok
    ? { state: "delivered" as const, nextAttemptAt: finishedAt }
    : Option.match(
      yield* nextAttemptAt({ attemptsMade: row.attempts + 1, finishedAt, retryAfter: outcome.retryAfter }),
      {
        onNone: () => ({ state: "given_up" as const, nextAttemptAt: finishedAt }),
        onSome: (at) => ({ state: "pending" as const, nextAttemptAt: at })
      }
    )
  return Option.some<Settled>({
    deliveryId: row.id,
    webhookId: row.webhookId,
    next,
    attempt: {
      deliveryId: row.id,
      scope: target.scope,
      workspaceId: row.workspaceId,
      surveyId: row.surveyId,
      eventId: row.eventId,
      eventType: row.eventType,
      ok: outcome.ok,
      responseStatus: outcome.responseStatus,
      error: outcome.error,
      attemptedAt
    }
  })
})

/**
 * The delivery worker: follows the outbox, fans each event out to its webhooks, and attempts
 * due deliveries with bounded concurrency. Supervised by the layer's scope: a defect restarts
 * the loop. Several processes may deliver from one database: a claim leases deliveries to
 * this process, which renews the leases of its attempts in flight every third of a lease. A
 * draining process claims nothing more and its attempts finish; shutdown then interrupts what is
 * left, which returns its deliveries to the queue. Deliveries live in the database, so a crash
 * loses nothing: the crashed process's leases run out and another process (or the next start)
 * attempts them again: at least once, with the same event id.
 *
 * Its rounds are one job of the list (src/BackgroundJobs.ts, `deliveryJob`): the loop runs them
 * one after the other, overlapping attempts, on the real clock; a simulated clock's walk through
 * time runs `dueNow` at each instant it visits.
 */
export class DeliveryWorker extends Effect.Service<DeliveryWorker>()("Webhooks/DeliveryWorker", {
  scoped: Effect.gen(function*() {
    const repo = yield* DeliveryRepo
    const deliveries = yield* Deliveries
    const settings = yield* DeliverySettings
    const observer = (yield* DeliveryRounds).completed
    const wake = yield* Queue.sliding<void>(1)
    const slots = new Slots(settings.maxConcurrent)
    const attempts = yield* FiberSet.make()
    const context = yield* Effect.context<DeliveryRepo | Signer | AppConfig>()
    const drain = yield* Drain
    const gate = yield* RoundGate
    const pollMillis = Duration.toMillis(settings.pollInterval)
    const leaseMillis = leaseMillisOf(yield* AppConfig)
    // Deliveries this process is attempting, whose leases it renews; `leasing` is open while there
    // are any, `idle` while there are none.
    const leased = new Set<number>()
    const leasing = yield* Effect.makeLatch(false)
    const idle = yield* Effect.makeLatch(true)
    // Attempts made and recorded so far.
    let made = 0
    // When the first delivery held back by its webhook's rate at the last claim may be made.
    let heldUntil: number | null = null
    // The worker, its writer and its lease renewal are woken by each other: each says so as it wakes
    // another, so that a test moving the clock waits for the woken one too (src/Background/LoopRounds.ts).
    const worker = yield* registerLoop("webhook delivery worker")
    const writer = yield* registerLoop("webhook delivery writer")
    const renewal = yield* registerLoop("webhook delivery lease renewal")

    // Finished attempts are written together, one transaction for all that finished meanwhile.
    const toSettle = yield* Queue.unbounded<{ readonly settled: Settled; readonly done: Deferred.Deferred<void> }>()
    const settler = Effect.gen(function*() {
      yield* waiting(Number.POSITIVE_INFINITY)
      const batch = Chunk.toReadonlyArray(yield* Queue.takeBetween(toSettle, 1, 256))
      yield* working
      const written = yield* Effect.exit(deliveries.settle(batch.map((b) => b.settled)))
      yield* Effect.forEach(batch, (b) => Deferred.done(b.done, written), { discard: true })
    }).pipe(Effect.forever)

    const settle = (settled: Settled) =>
      Effect.gen(function*() {
        const done = yield* Deferred.make<void>()
        yield* writer.wake(Queue.offer(toSettle, { settled, done }))
        yield* Deferred.await(done)
        made++
      })

    const releaseDelivery = (id: number) => releaseOrLapse(`lease of delivery ${id}`)(repo.release([id]))

    const run = (row: ClaimedDelivery) =>
      attemptDelivery(row).pipe(
        // The attempt and the write of its outcome are one piece of work in flight for a drain. Once
        // the outcome is known, the worker is as good as woken: it is, once the slot is free again.
        Effect.flatMap((settled) => worker.wake(Option.match(settled, { onNone: () => Effect.void, onSome: settle }))),
        drain.track,
        Effect.catchAllDefect((defect) =>
          Effect.zipRight(Effect.logError("webhook delivery attempt failed", defect), releaseDelivery(row.id))
        ),
        Effect.onInterrupt(() => releaseDelivery(row.id)),
        Effect.ensuring(Effect.suspend(() => {
          leased.delete(row.id)
          if (leased.size === 0) {
            leasing.unsafeClose()
            idle.unsafeOpen()
          }
          slots.release(row.webhookId)
          return worker.wake(Queue.offer(wake, undefined))
        })),
        Effect.provide(context),
        // The loop is not traced; each attempt is a span of its own.
        Effect.withTracerEnabled(true)
      )

    // The outbox is read at most this often (in the process's own time: a simulated clock that
    // stands still must not stop the reads); finishing attempts wake the worker far more often.
    const fanOutEvery = Math.min(pollMillis, 50)
    let lastFanOut = Number.NEGATIVE_INFINITY
    let fanned = 0
    const worthARound = Math.max(1, Math.floor(settings.perWebhook / 2))

    /**
     * One round; answers what it claimed and when the next one is due unless something wakes the
     * worker: `atOnce`, or at `wakeAt`, the earliest time something it found becomes claimable (a
     * time, not a wait: a round takes time, on PostgreSQL its queries wait on the network, and a
     * wait counted from the round's end would come that much after the due time), or none when
     * nothing is coming and only the poll looks again. `readOutbox` reads the outbox whatever
     * the last read's time.
     */
    const round = (readOutbox: boolean) =>
      Effect.gen(function*() {
        slots.takeFinished()
        const now = yield* Clock.currentTimeMillis
        if (drain.isDraining()) return { at: now, claimed: 0, atOnce: false, wakeAt: null }
        // One statement first: a round with nothing to fan out and nothing due costs only it.
        const seen = yield* repo.outlook(now)
        const readAt = yield* realTimeMillis
        let acted = false
        if (readOutbox || readAt - lastFanOut >= fanOutEvery || fanned >= settings.batch) {
          fanned = seen.eventsWaiting ? yield* deliveries.fanOut(now, settings.batch) : 0
          lastFanOut = readAt
          acted = seen.eventsWaiting
        }
        let claimed = 0
        // When a webhook held back by its delivery rate may next be attempted.
        let held: number | null = null
        if (slots.free > 0 && (fanned > 0 || seen.dueNow)) {
          acted = true
          const claim = yield* deliveries.claim({
            now,
            free: slots.free,
            perWebhook: settings.perWebhook,
            inFlight: slots.perWebhook,
            leaseMillis
          })
          claimed = claim.rows.length
          held = claim.heldUntil
          heldUntil = held
          for (const row of claim.rows) {
            leased.add(row.id)
            idle.unsafeClose()
            yield* renewal.wake(Effect.sync(() => leasing.unsafeOpen()))
            slots.take(row.webhookId)
            // An HTTP exchange under its own timeout: a test moving the clock waits for its answer.
            yield* FiberSet.run(attempts, yield* worker.exchange(run(row)))
          }
        }
        // A full batch fanned out: more events may be waiting.
        if (fanned >= settings.batch) return { at: now, claimed, atOnce: true, wakeAt: null }
        // Unless this round fanned out or claimed, the outlook's wake time still holds.
        const next = acted ? (yield* repo.outlook(now)).wakeAt : seen.wakeAt
        // Due but held back (no free slot, or the webhook's share in flight): a finishing attempt wakes us.
        const wakeAt = [next, held].filter((at): at is number => at !== null && at > now)
        return { at: now, claimed, atOnce: false, wakeAt: wakeAt.length === 0 ? null : Math.min(...wakeAt) }
      })

    /**
     * Waits until the next round is worth its queries: the wait is over, nothing is in flight any
     * more, or half a webhook's share of attempts finished (claiming after every single one costs
     * more than it gains).
     */
    const awaitWork = (deadline: number): Effect.Effect<void> =>
      Effect.gen(function*() {
        const left = deadline - (yield* Clock.currentTimeMillis)
        if (left <= 0) return
        yield* waiting(deadline)
        const woken = yield* Effect.timeout(Queue.take(wake), Duration.millis(left)).pipe(Effect.option)
        yield* working
        if (Option.isNone(woken) || slots.finishedSinceRound >= worthARound || slots.inFlight === 0) return
        yield* awaitWork(deadline)
      })

    const loop = Effect.gen(function*() {
      const { at, atOnce, claimed, wakeAt } = yield* gate.round(round(false))
      // The poll counts from the round's end, so that a slow round is not followed by another at once.
      const polled = (yield* Clock.currentTimeMillis) + pollMillis
      const deadline = atOnce ? at : wakeAt === null ? polled : Math.min(wakeAt, polled)
      if (observer !== undefined) yield* observer({ at, claimed, inFlight: slots.inFlight, sleepUntil: deadline })
      yield* awaitWork(deadline)
    }).pipe(Effect.forever)

    /**
     * Every attempt due at the clock's present, made and its outcome recorded, round after round
     * until none is left; answers how many were made and when the next one is due.
     */
    const dueNow = Effect.gen(function*() {
      // Attempts a round started before are the loop's: they finish first, and are not counted here.
      yield* idle.await
      const before = made
      while (true) {
        const { atOnce, claimed, wakeAt } = yield* round(true)
        yield* idle.await
        if (claimed === 0 && !atOnce) return { deliveryAttempts: made - before, nextDue: wakeAt }
      }
    }).pipe(Effect.withSpan("DeliveryWorker.dueNow"))

    /**
     * When the next attempt is due, from the outbox and the deliveries: `now` when one may be due
     * now. Attempts in flight finish and are recorded first, so that a clock moved on after this
     * answer never passes an attempt whose retry is still to be scheduled from its own instant.
     */
    const dueAt = (now: number) =>
      Effect.map(Effect.zipRight(idle.await, repo.outlook(now)), (seen) => {
        if (seen.eventsWaiting || seen.dueNow) return now
        const coming = [seen.wakeAt, heldUntil].filter((at): at is number => at !== null && at > now)
        return coming.length === 0 ? null : Math.min(...coming)
      })

    yield* supervise("webhook delivery writer", settler, { report: writer })
    // Every third of a lease while attempts are in flight; asleep otherwise.
    const renewEvery = Math.max(1, Math.floor(leaseMillis / 3))
    yield* supervise(
      "webhook delivery lease renewal",
      Effect.gen(function*() {
        yield* waiting(Number.POSITIVE_INFINITY)
        yield* leasing.await
        yield* working
        yield* parked((yield* Clock.currentTimeMillis) + renewEvery)
        yield* Effect.sleep(Duration.millis(renewEvery))
        yield* repo.renew([...leased], (yield* Clock.currentTimeMillis) + leaseMillis)
      }).pipe(Effect.forever),
      { report: renewal }
    )

    return {
      /** The worker's loop in the background of the current scope. */
      loop: supervise("webhook delivery worker", loop, { report: worker }),
      dueNow,
      dueAt
    } as const
  })
}) {}

/** The delivery of webhook events as a job (src/BackgroundJobs.ts). */
export const deliveryJob = Effect.gen(function*() {
  const worker = yield* DeliveryWorker
  const settings = yield* DeliverySettings
  return {
    name: "webhook delivery",
    lease: { _tag: "PerItem", item: "delivery" },
    every: settings.pollInterval,
    catchesUp: false,
    traced: false,
    round: worker.dueNow,
    dueAt: worker.dueAt,
    loop: worker.loop
  } satisfies BackgroundJob
})

/**
 * The outbox's depth and the age of its oldest due delivery, every 5 s in each process; only for
 * an exporter or the metrics listener (nothing else reads the gauges).
 */
export const outboxDepthJobs = Effect.gen(function*() {
  const repo = yield* DeliveryRepo
  const config = yield* AppConfig
  if (config.telemetry === undefined && config.metrics === undefined) return []
  return [processJob({
    name: "webhook outbox depth",
    every: Duration.seconds(5),
    run: Effect.flatMap(Effect.zip(repo.depth, Clock.currentTimeMillis), ([{ depth, oldestDueAt }, now]) =>
      Effect.zipRight(
        Metric.set(outboxDepth, depth),
        Metric.set(oldestDueDeliveryAge, oldestDueAt === null ? 0 : Math.max(0, now - oldestDueAt) / 1000)
      ))
  })]
})

/** The delivery worker and the outbox gauges in the background of a server. */
export const DeliveryWorkerLive = Layer.scopedDiscard(Effect.gen(function*() {
  yield* runJob(yield* deliveryJob)
  yield* runJobs(yield* outboxDepthJobs)
})).pipe(Layer.provide(DeliveryWorker.Default))
