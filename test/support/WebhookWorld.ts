import { SqlClient } from "@effect/sql"
import { Chunk, Clock, Context, Effect, Layer, Queue, Ref, Schema } from "effect"
import { WebhookBackgroundLive } from "./WebhookBackground.js"
import type { AppSettings } from "../../src/Config.js"
import { SurveyId } from "../../src/Domain/Ids.js"
import { OutboxRepo } from "../../src/Events/OutboxRepo.js"
import { type DeliveryRound, DeliveryRounds, DeliverySettings } from "../../src/Webhooks/DeliverySettings.js"
import type { Signer } from "../../src/Webhooks/Signer.js"
import { clientFor } from "./ApiClient.js"
import { baseFixture, TOKENS } from "./Fixtures.js"
import { decodeAs, TestServer } from "./TestServer.js"

type Settings = typeof DeliverySettings.Service

/** Every round the delivery worker reports, in order. */
export class WorkerRounds extends Context.Tag("test/WorkerRounds")<WorkerRounds, {
  readonly queue: Queue.Queue<DeliveryRound>
  /** The latest round a test has taken from the queue. */
  readonly latest: Ref.Ref<DeliveryRound | undefined>
}>() {}

const WorkerRoundsLive = Layer.effect(
  WorkerRounds,
  Effect.all({ queue: Queue.unbounded<DeliveryRound>(), latest: Ref.make<DeliveryRound | undefined>(undefined) })
)
const ReportRounds = Layer.effect(
  DeliveryRounds,
  Effect.map(WorkerRounds, ({ queue }) => ({
    completed: (round: DeliveryRound) => Queue.offer(queue, round).pipe(Effect.asVoid)
  }))
)

/**
 * The production graph with the webhook worker and its purge running, over a database of its
 * own seeded with the base fixture; the worker reports its rounds to `WorkerRounds`.
 */
export const WebhookWorld = (
  settings: Partial<Settings> = {},
  signer?: Layer.Layer<Signer>,
  app: Partial<AppSettings> = {}
) =>
  TestServer(baseFixture, app, { background: WebhookBackgroundLive, ...(signer === undefined ? {} : { signer }) }).pipe(
    Layer.provide(Layer.succeed(DeliverySettings, { ...DeliverySettings.defaultValue(), ...settings })),
    Layer.provide(ReportRounds),
    Layer.provideMerge(WorkerRoundsLive)
  )

/** Waits for the worker's next round that satisfies `check`; answers every round seen meanwhile. */
export const roundWhere = (check: (round: DeliveryRound) => boolean) =>
  Effect.gen(function*() {
    const { latest, queue } = yield* WorkerRounds
    const seen: Array<DeliveryRound> = []
    while (true) {
      const round = yield* Queue.take(queue)
      yield* Ref.set(latest, round)
      seen.push(round)
      if (check(round)) return seen
    }
  })

/**
 * Waits until the worker, with nothing in flight, has gone to sleep past the current (test)
 * clock time: from then on it cannot act before the clock moves. Answers the rounds it ran since
 * the last call, so that a test can check that none of them claimed anything, and until when it sleeps.
 */
export const workerAsleep = Effect.gen(function*() {
  const { latest, queue } = yield* WorkerRounds
  const now = yield* Clock.currentTimeMillis
  const seen = [...Chunk.toReadonlyArray(yield* Queue.takeAll(queue))]
  let last = seen[seen.length - 1] ?? (yield* Ref.get(latest))
  while (last === undefined || last.inFlight > 0 || last.sleepUntil <= now) {
    last = yield* Queue.take(queue)
    seen.push(last)
  }
  yield* Ref.set(latest, last)
  return { rounds: seen, sleepUntil: last.sleepUntil }
})

/** The deliveries claimed over `rounds`. */
export const claimedIn = ({ rounds }: { readonly rounds: ReadonlyArray<DeliveryRound> }) =>
  rounds.reduce((sum, round) => sum + round.claimed, 0)

/** Registers a webhook through the typed client and answers its signing secret. */
export const register = (targetUrl: string, surveyId?: string, token: string = TOKENS.editor) =>
  Effect.gen(function*() {
    const api = yield* clientFor(token)
    const registered = surveyId === undefined
      ? api.workspaceWebhooks.put({ payload: { targetUrl } })
      : api.surveyWebhook.put({ path: { id: SurveyId.make(surveyId) }, payload: { targetUrl } })
    const body = yield* registered.pipe(
      Effect.catchAll((error) => Effect.dieMessage(`registering ${targetUrl} for ${surveyId ?? "the workspace"} failed: ${error}`))
    )
    return body.signingSecret
  })

/** Writes a `response.completed` event the way a completion does: in a transaction, through the outbox. */
export const complete = (surveyId: string, workspaceId = "ws_a", responseId = "rsp_1") =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const outbox = yield* OutboxRepo
    return yield* sql.withTransaction(outbox.append({
      type: "response.completed",
      workspaceId,
      surveyId,
      data: { responseId, externalUserId: null }
    })).pipe(Effect.orDie)
  })

/** One row of `delivery_attempts`, as the tests read it. */
export const LoggedAttempt = Schema.Struct({
  eventId: Schema.String,
  scope: Schema.String,
  ok: Schema.Number,
  responseStatus: Schema.NullOr(Schema.Number),
  error: Schema.NullOr(Schema.String),
  attemptedAt: Schema.Number
})
export type LoggedAttempt = typeof LoggedAttempt.Type

/** Every logged attempt, oldest first. */
export const loggedAttempts = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`SELECT event_id, scope, ok, response_status, error, attempted_at
    FROM delivery_attempts ORDER BY attempted_at, rowid`.pipe(Effect.orDie)
  return decodeAs(Schema.Array(LoggedAttempt), rows)
})

/** One row of `deliveries`, as the tests read it. */
export const DeliveryState = Schema.Struct({
  id: Schema.Number,
  state: Schema.String,
  attempts: Schema.Number,
  nextAttemptAt: Schema.Number,
  leaseUntil: Schema.Number
})
export type DeliveryState = typeof DeliveryState.Type

export const deliveries = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`SELECT id, state, attempts, next_attempt_at, lease_until FROM deliveries ORDER BY id`
    .pipe(Effect.orDie)
  return decodeAs(Schema.Array(DeliveryState), rows)
})
