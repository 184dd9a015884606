import { Cause, Chunk, Clock, Context, Deferred, Duration, Effect, FiberSet, Layer, Option, Queue, Ref, Schedule } from "effect"
import { AppConfig } from "../Config.js"
import { type ClaimedRow, DeliveryRepo, type Settled } from "./DeliveryRepo.js"
import { delayAfter } from "./RetrySchedule.js"
import { type AttemptOutcome, send } from "./Sender.js"
import { Signer } from "./Signer.js"

/** Tuning of the delivery worker; the defaults are the production values. */
export class DeliverySettings extends Context.Reference<DeliverySettings>()("Webhooks/DeliverySettings", {
  defaultValue: () => ({
    /** How often the outbox is read when nothing wakes the worker (events written by the CLI). */
    pollInterval: Duration.millis(100),
    /** Attempts in flight at once, over all webhooks. */
    maxConcurrent: 64,
    /** Attempts in flight at once for one webhook, so one slow endpoint cannot take every slot. */
    perWebhook: 16,
    /** Per attempt (decisions §7). */
    attemptTimeout: Duration.seconds(15),
    /** How long a claimed delivery stays with this worker; longer than an attempt can take. */
    lease: Duration.seconds(30),
    /** Outbox events read per round. */
    batch: 1000,
    /** How often attempts past retention are deleted. */
    purgeInterval: Duration.hours(1)
  })
}) {}

/**
 * Signs and sends one event body to one endpoint (decisions §7): Standard Webhooks headers,
 * `x-service-event-id`, and the URL policy applied again at the moment of sending.
 */
export const attemptOnce = Effect.fn("Webhooks.attemptOnce")(function*(input: {
  readonly targetUrl: string
  readonly secret: string
  readonly eventId: string
  readonly body: string
}) {
  const signer = yield* Signer
  const config = yield* AppConfig
  const settings = yield* DeliverySettings
  const now = yield* Clock.currentTimeMillis
  const signature = yield* signer.sign({
    secret: input.secret,
    eventId: input.eventId,
    timestampSeconds: Math.floor(now / 1000),
    body: input.body
  })
  return yield* send({
    targetUrl: input.targetUrl,
    body: input.body,
    headers: {
      ...signature,
      "content-type": "application/json",
      "user-agent": "survey-service-webhooks/1",
      "x-service-event-id": input.eventId
    },
    allowPrivate: config.webhookAllowPrivateTargets,
    timeout: settings.attemptTimeout
  })
})

/** One attempt of a claimed delivery and where the retry schedule moves it; none once its webhook is gone. */
const attemptDelivery = Effect.fn("DeliveryWorker.attempt")(function*(row: ClaimedRow) {
  const repo = yield* DeliveryRepo
  if (row.targetUrl === null || row.secret === null) {
    yield* repo.drop(row.id)
    return Option.none<Settled>()
  }
  const attemptedAt = yield* Clock.currentTimeMillis
  const outcome: AttemptOutcome = yield* attemptOnce({
    targetUrl: row.targetUrl,
    secret: row.secret,
    eventId: row.eventId,
    body: row.payload
  })
  const finishedAt = yield* Clock.currentTimeMillis
  const attemptsMade = row.attempts + 1
  const next = outcome.ok
    ? { state: "delivered" as const, nextAttemptAt: finishedAt }
    : Option.match(yield* delayAfter(attemptsMade, finishedAt), {
      onNone: () => ({ state: "given_up" as const, nextAttemptAt: finishedAt }),
      onSome: (delay) => ({ state: "pending" as const, nextAttemptAt: finishedAt + Duration.toMillis(delay) })
    })
  return Option.some<Settled>({
    deliveryId: row.id,
    next,
    attempt: {
      deliveryId: row.id,
      scope: row.webhookSurveyId === null ? "workspace" : "survey",
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

/** Logs a defect and carries on after a pause, unless the fiber is being interrupted. */
export const restartOnDefect = (name: string) => <R>(loop: Effect.Effect<never, never, R>): Effect.Effect<never, never, R> =>
  loop.pipe(
    Effect.catchAllCause((cause) =>
      Cause.isInterruptedOnly(cause)
        ? Effect.failCause(cause)
        : Effect.logError(`${name} failed; restarting`, cause)
    ),
    Effect.repeat(Schedule.spaced("1 second")),
    Effect.flatMap(() => Effect.never)
  )

/**
 * The delivery worker: follows the outbox, fans each event out to its webhooks, and attempts
 * due deliveries with bounded concurrency. Supervised by the layer's scope: a defect restarts
 * the loop; shutdown interrupts in-flight attempts, which return their deliveries to the queue.
 * Deliveries live in the database, so a crash loses nothing: the next start releases the
 * leases of unfinished attempts (and a lease held by a live worker that stops answering
 * expires), so they are attempted again: at least once, with the same event id.
 */
export const DeliveryWorkerLive = Layer.scopedDiscard(Effect.gen(function*() {
  const repo = yield* DeliveryRepo
  const settings = yield* DeliverySettings
  const wake = yield* Queue.sliding<void>(1)
  const inFlight = yield* Ref.make(0)
  const perWebhook = new Map<string, number>()
  const attempts = yield* FiberSet.make()
  const context = yield* Effect.context<DeliveryRepo | Signer | AppConfig>()
  const pollMillis = Duration.toMillis(settings.pollInterval)
  yield* repo.releaseAll

  // Finished attempts are written together, one transaction for all that finished meanwhile.
  const toSettle = yield* Queue.unbounded<{ readonly settled: Settled; readonly done: Deferred.Deferred<void> }>()
  const settler = Effect.gen(function*() {
    const batch = Chunk.toReadonlyArray(yield* Queue.takeBetween(toSettle, 1, 256))
    const written = yield* Effect.exit(repo.settle(batch.map((b) => b.settled)))
    yield* Effect.forEach(batch, (b) => Deferred.done(b.done, written), { discard: true })
  }).pipe(Effect.forever)

  const settle = (settled: Settled) =>
    Effect.gen(function*() {
      const done = yield* Deferred.make<void>()
      yield* Queue.offer(toSettle, { settled, done })
      yield* Deferred.await(done)
    })

  const run = (row: ClaimedRow) =>
    attemptDelivery(row).pipe(
      Effect.flatMap(Option.match({ onNone: () => Effect.void, onSome: settle })),
      Effect.catchAllDefect((defect) =>
        Effect.zipRight(Effect.logError("webhook delivery attempt failed", defect), repo.release([row.id]))
      ),
      Effect.onInterrupt(() => repo.release([row.id])),
      Effect.ensuring(Effect.suspend(() => {
        const left = (perWebhook.get(row.webhookId) ?? 1) - 1
        if (left <= 0) perWebhook.delete(row.webhookId)
        else perWebhook.set(row.webhookId, left)
        finishedSinceRound++
        return Effect.zipRight(Ref.update(inFlight, (n) => n - 1), Queue.offer(wake, undefined))
      })),
      Effect.provide(context)
    )

  // The outbox is read at most this often; finishing attempts wake the worker far more often.
  const fanOutEvery = Math.min(pollMillis, 50)
  let lastFanOut = Number.NEGATIVE_INFINITY
  let fanned = 0
  let finishedSinceRound = 0
  const worthARound = Math.max(1, Math.floor(settings.perWebhook / 2))

  /** One round; answers how long to wait before the next one unless something wakes the worker. */
  const round = Effect.gen(function*() {
    finishedSinceRound = 0
    const now = yield* Clock.currentTimeMillis
    if (now - lastFanOut >= fanOutEvery || fanned >= settings.batch) {
      fanned = yield* repo.fanOut(now, settings.batch)
      lastFanOut = now
    }
    const free = settings.maxConcurrent - (yield* Ref.get(inFlight))
    if (free > 0) {
      const rows = yield* repo.claim({
        now,
        free,
        perWebhook: settings.perWebhook,
        inFlight: perWebhook,
        leaseMillis: Duration.toMillis(settings.lease)
      })
      yield* Ref.update(inFlight, (n) => n + rows.length)
      for (const row of rows) {
        perWebhook.set(row.webhookId, (perWebhook.get(row.webhookId) ?? 0) + 1)
        yield* FiberSet.run(attempts, run(row))
      }
    }
    if (fanned >= settings.batch) return 0
    const next = yield* repo.nextWake(now)
    // Due but held back (no free slot, or the webhook's share in flight): a finishing attempt wakes us.
    return next === null || next <= now ? pollMillis : Math.min(next - now, pollMillis)
  })

  /**
   * Waits until the next round is worth its queries: the wait is over, nothing is in flight any
   * more, or half a webhook's share of attempts finished (claiming after every single one costs
   * more than it gains).
   */
  const awaitWork = (wait: number) =>
    Effect.gen(function*() {
      const deadline = (yield* Clock.currentTimeMillis) + wait
      while (true) {
        const left = deadline - (yield* Clock.currentTimeMillis)
        if (left <= 0) return
        const woken = yield* Effect.timeout(Queue.take(wake), Duration.millis(left)).pipe(Effect.option)
        if (woken._tag === "None") return
        if (finishedSinceRound >= worthARound || (yield* Ref.get(inFlight)) === 0) return
      }
    })

  const loop = Effect.gen(function*() {
    const wait = yield* round
    if (wait > 0) yield* awaitWork(wait)
  }).pipe(Effect.forever)

  yield* Effect.forkScoped(restartOnDefect("webhook delivery writer")(settler))
  yield* Effect.forkScoped(restartOnDefect("webhook delivery worker")(loop))
}))
