import { Array as Arr, Clock, Data, Duration, Effect, Layer, Metric } from "effect"
import { heldJob, periodJob, runJobs } from "../Background/Jobs.js"
import { traced } from "../Background/Supervise.js"
import type { ResponseId, SurveyId } from "../Domain/Ids.js"
import { toIso } from "../Domain/Time.js"
import { batchCommitted, Transactions, WorkBatches } from "../Sql/Transactions.js"
import { aggregatorLag } from "../Telemetry/Metrics.js"
import { AggregateRepo, type StoredContribution } from "./AggregateRepo.js"
import { type Aggregates, apply, contributionOf, emptyAggregates, type QuestionDef, signatureOf } from "./Compute.js"
import { countedIn, neverRebuilt, RebuildRepo, type RebuildState, shadowOf } from "./RebuildRepo.js"

/** An operator asked to rebuild a survey that does not exist. */
export class UnknownSurvey extends Data.TaggedError("UnknownSurvey")<{ readonly message: string }> {}

/** Changes read per step; a full step is followed at once by the next. */
const batchSize = 1000
/**
 * Rebuild batches per round of the background loop, between two looks at the change log: few,
 * so that new responses are counted within moments while a large survey rebuilds.
 */
const batchesPerRound = 4

/** What one batch of a rebuild did. */
export interface RebuildBatch {
  readonly surveyId: SurveyId
  /** Responses counted so far by this generation of the survey's rebuild. */
  readonly passed: number
  /** The rebuilt counters replaced the survey's: its analytics are exact again. */
  readonly done: boolean
}

/** Where a step counts a survey's changes: its own counters, or those a rebuild is building. */
interface Target {
  readonly state: RebuildState
  readonly signature: string
  /** Of the changed responses, those the rebuild's walk has passed (while one is under way). */
  readonly passed: ReadonlySet<ResponseId>
}

/**
 * Keeps the stored aggregates current by following `response_changes`: each changed response
 * has its former contribution subtracted and its current one added, in one transaction with
 * the new position. A survey whose question layout changed since its counters were built
 * (positions, types, deletions) is rebuilt in the background, batch by batch, into counters of
 * its own that replace the survey's when complete (docs/architecture.md#analytics-rebuilds).
 */
export class Aggregator extends Effect.Service<Aggregator>()("Analytics/Aggregator", {
  effect: Effect.gen(function*() {
    const transactions = yield* Transactions
    const repo = yield* AggregateRepo
    const rebuilds = yield* RebuildRepo
    // Steps and rebuild batches of this process never interleave their transactions; across
    // processes, each locks the aggregation's position first (`repo.position`).
    const lock = yield* Effect.makeSemaphore(1)
    const now = Effect.map(Clock.currentTimeMillis, toIso)

    /**
     * Applies the next batch of changes; answers how many change rows it consumed. How far the log
     * is settled is read first, in a short transaction of its own (`settledChanges`): saves wait
     * for that read only, not for the step's work.
     */
    const step = Effect.fn("Aggregator.step")(function*() {
      return yield* lock.withPermits(1)(Effect.flatMap(repo.settledChanges, (upTo) => transactions.within(Effect.gen(function*() {
        const from = yield* repo.position
        const changes = yield* repo.changesAfter(from, batchSize, upTo)
        const last = changes[changes.length - 1]
        if (last === undefined) return 0
        const ids = Arr.dedupe(changes.map((c) => c.responseId))
        const current = yield* repo.currentResponses(ids)
        const former = yield* repo.contributionsOf(ids)

        // The questions, stored signatures and rebuild states of every survey the changes touch.
        const touched = Arr.dedupe([...current.map((r) => r.surveyId), ...former.map((f) => f.surveyId)])
        const questionsBySurvey = yield* repo.questionsOfSurveys(touched)
        const storedBySurvey = yield* repo.storedSignatures(touched)
        const states = yield* rebuilds.states(touched)
        const questionsOf = (surveyId: SurveyId) => questionsBySurvey.get(surveyId) ?? []

        const targets = new Map<SurveyId, Target>()
        for (const surveyId of touched) {
          const signature = signatureOf(questionsOf(surveyId))
          let state = states.get(surveyId) ?? neverRebuilt(surveyId)
          const stored = storedBySurvey.get(surveyId) ?? null
          // Questions changed without a rebuild asked for them (or since it was): one starts now.
          if (state.active ? state.signature !== signature : stored !== null && stored !== signature) {
            yield* rebuilds.request(surveyId, signature, yield* now)
            state = { ...state, generation: state.generation + 1, active: true, signature, after: null, passed: 0 }
          }
          const passed = state.active
            ? yield* rebuilds.passedOf(surveyId, state.after, current.filter((r) => r.surveyId === surveyId).map((r) => r.id))
            : new Set<ResponseId>()
          targets.set(surveyId, { state, signature, passed })
        }
        const targetOf = (surveyId: SurveyId): Target =>
          targets.get(surveyId) ?? { state: neverRebuilt(surveyId), signature: signatureOf(questionsOf(surveyId)), passed: new Set() }

        const deltas = new Map<SurveyId, { delta: Aggregates; signature: string }>()
        const deltaOf = (key: SurveyId, signature: string) => {
          let entry = deltas.get(key)
          if (entry === undefined) {
            entry = { delta: emptyAggregates(), signature }
            deltas.set(key, entry)
          }
          return entry.delta
        }
        for (const f of former) {
          const target = targetOf(f.surveyId)
          const key = countedIn(target.state, f.generation)
          if (key !== null) apply(deltaOf(key, target.signature), f.contribution, -1)
        }
        const saved: Array<StoredContribution> = []
        const byIdOf = new Map<SurveyId, ReadonlyMap<string, QuestionDef>>()
        for (const response of current) {
          const { passed, signature, state } = targetOf(response.surveyId)
          // While a rebuild runs the survey's own counters stay as they were; a response its walk
          // has not passed yet is counted when it gets there, with what it holds then.
          if (state.active && !passed.has(response.id)) continue
          let byId = byIdOf.get(response.surveyId)
          if (byId === undefined) {
            byId = new Map(questionsOf(response.surveyId).map((q) => [q.id, q]))
            byIdOf.set(response.surveyId, byId)
          }
          const contribution = contributionOf(byId, response)
          const key = state.active ? shadowOf(response.surveyId) : response.surveyId
          apply(deltaOf(key, signature), contribution, 1)
          saved.push({
            responseId: response.id,
            surveyId: response.surveyId,
            contribution,
            generation: state.active ? state.generation : state.liveGeneration
          })
        }
        yield* repo.addDeltas([...deltas].map(([surveyId, { delta, signature }]) => ({ surveyId, delta, signature })))
        const present = new Set(current.map((r) => r.id))
        yield* repo.deleteContributions(ids.filter((id) => !present.has(id)))
        yield* repo.saveContributions(saved)
        yield* repo.setPosition(last.seq)
        // In the same transaction: the log holds only what the aggregates do not include yet.
        yield* repo.pruneChanges(from, last.seq)
        return changes.length
      }))))
    })

    /** Applies changes until none are left. */
    const catchUp = Effect.fn("Aggregator.catchUp")(function*() {
      let total = 0
      while (true) {
        const consumed = yield* step()
        total += consumed
        if (consumed < batchSize) return total
        yield* batchCommitted("analytics aggregation")
      }
    })

    /**
     * One batch of a rebuild (of the survey given, or of the one waiting longest): the next
     * WorkBatches' `rebuild` responses of its walk counted into the rebuild's counters with the position
     * reached, in one transaction; the last batch moves those counters in place of the survey's.
     * Undefined when there was nothing to do.
     */
    const rebuildBatchOf = (only: SurveyId | undefined, limit?: number) =>
      lock.withPermits(1)(transactions.within(Effect.gen(function*() {
        const size = limit ?? (yield* WorkBatches).rebuild
        // The position first, locked as a step locks it: a step and a batch never interleave.
        yield* repo.position
        const surveyId = only ?? (yield* rebuilds.pending(1))[0]
        if (surveyId === undefined) return undefined
        let state = yield* rebuilds.stateOf(surveyId, "update")
        if (!state.active) return undefined
        const shadow = shadowOf(surveyId)
        if (!(yield* repo.surveyExists(surveyId))) {
          yield* repo.clearCounters(shadow)
          yield* rebuilds.drop(surveyId)
          return undefined
        }
        const questions = yield* repo.questionsOf(surveyId)
        const signature = signatureOf(questions)
        if (signature !== state.signature) {
          yield* rebuilds.request(surveyId, signature, yield* now)
          state = yield* rebuilds.stateOf(surveyId, "update")
        }
        // A new generation starts from empty counters.
        if (state.after === null) yield* repo.clearCounters(shadow)
        const page = yield* repo.responsePage(surveyId, state.after, size)
        const byId = new Map(questions.map((q) => [q.id, q]))
        const delta = emptyAggregates()
        const saved = page.responses.map((response): StoredContribution => {
          const contribution = contributionOf(byId, response)
          apply(delta, contribution, 1)
          return { responseId: response.id, surveyId, contribution, generation: state.generation }
        })
        yield* repo.saveContributions(saved)
        // Always, so that the rebuilt counters have their survey row even with no response.
        yield* repo.addDelta(shadow, delta, signature)
        const passed = state.passed + page.responses.length
        if (page.next !== null && page.responses.length === size) {
          yield* rebuilds.advance(surveyId, state.generation, page.next, passed)
          return { surveyId, passed, done: false }
        }
        yield* repo.moveCounters(shadow, surveyId)
        yield* rebuilds.finish(surveyId, state.generation, yield* now)
        return { surveyId, passed, done: true }
      })))

    /** One batch of the rebuild waiting longest, if any, of `limit` responses (WorkBatches' `rebuild` unless given). */
    const rebuildStep = Effect.fn("Aggregator.rebuildStep")(function*(limit?: number) {
      return yield* rebuildBatchOf(undefined, limit)
    })

    /** Up to `batchesPerRound` batches of waiting rebuilds: the background loop's share per round. */
    const rebuildRound = Effect.fn("Aggregator.rebuildRound")(function*() {
      let batches = 0
      while (batches < batchesPerRound) {
        const batch = yield* rebuildBatchOf(undefined)
        if (batch === undefined) break
        batches += 1
        yield* batchCommitted("analytics rebuild")
      }
      return batches
    })

    /** Starts (or starts again) a rebuild of the survey's counters for its current questions. */
    const requestRebuild = Effect.fn("Aggregator.requestRebuild")(function*(surveyId: SurveyId) {
      yield* transactions.within(Effect.gen(function*() {
        const questions = yield* repo.questionsOf(surveyId)
        yield* rebuilds.request(surveyId, signatureOf(questions), yield* now)
      }))
    })

    /**
     * Rebuilds one survey's counters through the batched path, to the end: a new generation, then
     * batch after batch (`progress` hears each). Answers how many responses it counted.
     *
     * With `pause` (the operator's command beside a server), it waits `pause` before each batch
     * and does the batch only when nobody moved the rebuild on meanwhile: while a serving
     * process's background loop works on it, the command only follows (`progress` hears where it
     * stands), so the two never compete for the database; when nobody does, it works alone.
     */
    const rebuild = Effect.fn("Aggregator.rebuild")(function*(
      surveyId: SurveyId,
      progress: (batch: RebuildBatch) => Effect.Effect<void> = () => Effect.void,
      pause?: Effect.Effect<void>
    ) {
      yield* requestRebuild(surveyId)
      let seen = pause === undefined ? undefined : yield* rebuilds.stateOf(surveyId)
      while (true) {
        if (pause !== undefined) {
          yield* pause
          const now = yield* rebuilds.stateOf(surveyId)
          if (!now.active) return now.passed
          if (seen === undefined || now.generation !== seen.generation || now.passed !== seen.passed) {
            seen = now
            yield* progress({ surveyId, passed: now.passed, done: false })
            continue
          }
        }
        const batch = yield* rebuildBatchOf(surveyId)
        // Finished by another process (its background loop), or the survey is gone.
        if (batch === undefined) return (yield* rebuilds.stateOf(surveyId)).passed
        yield* progress(batch)
        if (batch.done) return batch.passed
        if (pause !== undefined) seen = yield* rebuilds.stateOf(surveyId)
        yield* batchCommitted("analytics rebuild")
      }
    })

    /** `rebuild` for an operator: an unknown id is an error rather than an empty survey. */
    const rebuildExisting = Effect.fn("Aggregator.rebuildExisting")(function*(
      surveyId: SurveyId,
      progress?: (batch: RebuildBatch) => Effect.Effect<void>,
      pause?: Effect.Effect<void>
    ) {
      if (!(yield* repo.surveyExists(surveyId))) {
        return yield* new UnknownSurvey({ message: `No survey with id ${JSON.stringify(surveyId)}.` })
      }
      return yield* rebuild(surveyId, progress, pause)
    })

    /**
     * Rebuilds every survey, one after another; changes recorded (and settled) before the start are
     * then known to be included, and the aggregation's position moves past them.
     */
    const rebuildAll = Effect.fn("Aggregator.rebuildAll")(function*(
      progress?: (batch: RebuildBatch, survey: number, of: number) => Effect.Effect<void>,
      pause?: Effect.Effect<void>
    ) {
      const settled = yield* repo.settledChanges
      const latest = yield* repo.latestChange
      const upTo = settled === undefined ? latest : Math.min(settled, latest)
      const ids = yield* repo.surveyIds
      let responses = 0
      for (const [index, id] of ids.entries()) {
        responses += yield* rebuild(id, progress === undefined ? undefined : (batch) => progress(batch, index + 1, ids.length), pause)
      }
      yield* skipIncluded(upTo)
      yield* repo.checkpoint
      return { surveys: ids.length, responses }
    })

    /**
     * Moves the aggregation's position to `upTo` and drops the changes it passes, a bounded range
     * per transaction: every survey was rebuilt after they were recorded, so they are counted.
     */
    const skipIncluded = (upTo: number) =>
      Effect.gen(function*() {
        while (true) {
          const from = yield* lock.withPermits(1)(transactions.within(Effect.gen(function*() {
            const from = yield* repo.position
            if (from >= upTo) return upTo
            const to = Math.min(upTo, from + pruneRange)
            yield* repo.setPosition(to)
            yield* repo.pruneChanges(from, to)
            return to
          })))
          if (from >= upTo) return
          yield* batchCommitted("analytics position")
        }
      })

    /** Starts a rebuild of each survey whose questions were moved, retyped or deleted since its counters were built. */
    const sweepLayouts = Effect.fn("Aggregator.sweepLayouts")(function*() {
      const layouts = yield* repo.storedLayouts
      const stale = layouts.filter((l) => signatureOf(l.questions) !== l.signature)
      for (const l of stale) yield* requestRebuild(l.surveyId)
      return stale.length
    })

    return {
      step,
      catchUp,
      rebuildStep,
      rebuildRound,
      requestRebuild,
      rebuild,
      rebuildExisting,
      rebuildAll,
      sweepLayouts
    } as const
  })
}) {}

/** Changes skipped per transaction once a rebuild of every survey included them. */
const pruneRange = 10_000

/**
 * The background aggregation's jobs (src/BackgroundJobs.ts): one that follows the changes and
 * works on rebuilds (a round of batches after each look at the changes), polled every 100 ms (well
 * inside the 2 s freshness goal) by one process at a time (the others take over when its lease
 * runs out), and a layout sweep once every 30 s over all processes.
 */
export const aggregatorJobs = Effect.gen(function*() {
  const aggregator = yield* Aggregator
  const repo = yield* AggregateRepo
  // Polled every 100 ms: traced only when there is something to apply.
  const tick = Effect.gen(function*() {
    const lag = yield* repo.lag
    yield* Metric.set(aggregatorLag, lag.changes)
    if (lag.changes > 0) yield* traced("job analytics aggregation")(aggregator.catchUp())
    if (lag.rebuilding) yield* traced("job analytics rebuild")(aggregator.rebuildRound())
  })
  return [
    yield* heldJob({
      name: "analytics aggregation",
      key: "analytics-aggregation",
      every: Duration.millis(100),
      run: tick,
      dueAt: (now) => Effect.map(Effect.orDie(repo.lag), (lag) => lag.changes > 0 || lag.rebuilding ? now : null)
    }),
    yield* periodJob({
      name: "analytics layout sweep",
      key: "analytics-layout-sweep",
      period: Duration.seconds(30),
      run: aggregator.sweepLayouts()
    })
  ] as const
})

/** The background aggregation in a server. */
export const AggregatorLive = Layer.scopedDiscard(Effect.flatMap(aggregatorJobs, runJobs))
