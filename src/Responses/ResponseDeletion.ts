import { Array as Arr, Effect } from "effect"
import { CounterAdjustments } from "../Analytics/CounterAdjustments.js"
import type { ResponseId, SurveyId, WorkspaceId } from "../Domain/Ids.js"
import { Outbox } from "../Events/Outbox.js"
import { requestHash, scopeText } from "../Http/Idempotency.js"
import { batchCommitted, Transactions, WorkBatches } from "../Sql/Transactions.js"
import { type Doomed, ResponseDeletionRepo } from "./ResponseDeletionRepo.js"

/**
 * Deletes responses (v1-extensions §X2.3): the response and its answers, what it contributes to
 * the stored aggregates (subtracted, not recomputed), the survey's `responseCount`, every stored
 * event payload that carries it (reduced to `{responseId, externalUserId: null, response: null}`,
 * so neither a redelivery nor a pending retry sends it again), the answers remembered for
 * idempotent retries of its respondent; and one `response.deleted` event each, all in one
 * transaction. An erasure goes through the person's responses in such transactions of
 * WorkBatches' `erasure` responses each.
 */

/** Bounds the erasure's loop: far more batches than a workspace's responses make. */
const maxBatches = 10_000_000
export class ResponseDeletion extends Effect.Service<ResponseDeletion>()("Responses/ResponseDeletion", {
  effect: Effect.gen(function*() {
    const transactions = yield* Transactions
    const repo = yield* ResponseDeletionRepo
    const counters = yield* CounterAdjustments
    const outbox = yield* Outbox

    /** Rewrites every stored payload that carries one of the responses. */
    const reducePayloads = (doomed: ReadonlyArray<Doomed>) =>
      Effect.gen(function*() {
        const ids = doomed.map((d) => d.id)
        const linked = yield* repo.linkedEvents(ids)
        // Events stored before they were linked to their response name it only in the payload;
        // all of them precede the first linked one, which bounds the survey's events looked at.
        const firstLinked = yield* repo.firstLinkedSeq
        const unlinked = yield* Effect.forEach(
          Arr.dedupe(doomed.map((d) => d.surveyId)),
          (surveyId) => repo.unlinkedEvents(surveyId, firstLinked)
        ).pipe(Effect.map(Arr.flatten))
        const wanted = new Set<string>(ids)
        for (const event of [...linked, ...unlinked]) {
          const responseId = event.payload.data["responseId"]
          if (typeof responseId !== "string" || !wanted.has(responseId)) continue
          yield* repo.replacePayload(event.seq, {
            ...event.payload,
            data: { responseId, externalUserId: null, response: null }
          })
        }
      })

    const remove = (doomed: ReadonlyArray<Doomed>) =>
      Effect.gen(function*() {
        if (doomed.length === 0) return
        const ids = doomed.map((d) => d.id)
        yield* counters.forget(ids)
        const bySurvey = Object.values(Arr.groupBy(doomed, (d) => d.surveyId))
        // The surveys' clock rows before the events, as a save stamps before it appends its events
        // (src/Responses/ChangeClockRepo.ts): a save holding a clock row may queue for the events'
        // table behind an outbox reader, which waits for every transaction that wrote events. Were
        // this one among them while it waits for that clock row, the three would stand still.
        for (const rows of bySurvey) yield* repo.raiseClock(rows[0].surveyId, rows.map((d) => d.id))
        yield* reducePayloads(doomed)
        yield* repo.deleteResponses(ids)
        yield* outbox.appendAll(doomed.map((d) => ({
          type: "response.deleted" as const,
          workspaceId: d.workspaceId,
          surveyId: d.surveyId,
          responseId: d.id,
          data: { responseId: d.id, externalUserId: d.externalUserId }
        })))
        // The surveys' rows last, as a save counts its new response after writing its events
        // (src/Responses/ResponseWriter.ts). Holding a survey's row while the payloads' writes queue
        // behind an outbox reader (src/Sql/Dialect.ts `settledSeq`), which waits for that save, which
        // waits for the row, would stand all three still.
        for (const rows of bySurvey) yield* repo.lowerResponseCount(rows[0].surveyId, rows.length)
      })

    /** Deletes one response of a survey of the workspace; answers whether it existed. */
    const deleteOne = Effect.fn("ResponseDeletion.deleteOne")(function*(input: {
      readonly workspaceId: WorkspaceId
      readonly surveyId: SurveyId
      readonly responseId: ResponseId
    }) {
      const doomed = yield* repo.doomedResponse(input)
      yield* remove(doomed)
      return doomed.length > 0
    }, (effect) => Effect.orDie(transactions.within(effect)))

    /**
     * Erases one person of a workspace: every response carrying the `externalUserId` (trashed
     * surveys included), and the embed sessions and respondent tokens made for them, so that no
     * later response can carry the id. The id stays only in the `response.deleted` events written
     * here (their `data`, as X2.3 requires, for the receivers to learn whose responses went), which
     * are kept 30 days for redelivery like every event. Answers how many responses went.
     *
     * The responses go WorkBatches' `erasure` at a time, each batch with its events in a
     * transaction of its own, so that erasing a person with many responses never holds the
     * database for long. Stopped half way, the responses already deleted stay deleted with their
     * events, and the same erasure again deletes the rest (answering how many it deleted).
     */
    const erase = Effect.fn("ResponseDeletion.erase")(function*(input: {
      readonly workspaceId: WorkspaceId
      readonly externalUserId: string
    }) {
      const batches = yield* WorkBatches
      // The person's tokens go first: a save reads its token again inside its transaction (held
      // FOR SHARE until it commits on PostgreSQL; on SQLite writers take turns), so this waits for
      // saves in flight and the responses they stored are among those read next; a save that
      // comes later finds its token gone.
      yield* transactions.within(repo.deletePersonTokens(input))
      let deleted = 0
      for (let step = 0; step < maxBatches; step++) {
        const count = yield* transactions.within(Effect.gen(function*() {
          const doomed = yield* repo.doomedOfPerson(input, batches.erasure)
          yield* remove(doomed)
          return doomed.length
        }))
        if (count === 0) break
        deleted += count
        yield* batchCommitted("erasure")
      }
      // Remembered answers of embed session requests for the person (sealed, but holding its one-time URL).
      const hashes = (yield* repo.surveysOf(input.workspaceId)).map((surveyId) =>
        requestHash("POST", `/surveys/${surveyId}/embed-sessions`, { externalUserId: input.externalUserId })
      )
      yield* transactions.within(
        repo.deleteRemembered(scopeText({ _tag: "Workspace", workspaceId: input.workspaceId }), hashes)
      )
      return deleted
    }, Effect.orDie)

    return { deleteOne, erase } as const
  })
}) {}
