import { Array as Arr, Data, Duration, Effect, Layer, Metric } from "effect"
import { heldJob, periodJob, runJobs } from "../Background/Jobs.js"
import { traced } from "../Background/Supervise.js"
import type { SurveyId } from "../Domain/Ids.js"
import { Transactions } from "../Sql/Transactions.js"
import { aggregatorLag } from "../Telemetry/Metrics.js"
import { AggregateRepo, type PagePosition, type StoredContribution } from "./AggregateRepo.js"
import { type Aggregates, apply, contributionOf, emptyAggregates, signatureOf } from "./Compute.js"

/** An operator asked to rebuild a survey that does not exist. */
export class UnknownSurvey extends Data.TaggedError("UnknownSurvey")<{ readonly message: string }> {}

type Page = Effect.Effect.Success<ReturnType<AggregateRepo["responsePage"]>>

/** Changes read per step; a full step is followed at once by the next. */
const batchSize = 1000
/** Responses read per page while rebuilding a survey. */
const rebuildPage = 1000

/**
 * Keeps the stored aggregates current by following `response_changes`: each changed response
 * has its former contribution subtracted and its current one added, in one transaction with
 * the new position. A survey whose question layout changed since its counters were built
 * (positions, types, deletions) is rebuilt from scratch instead.
 */
export class Aggregator extends Effect.Service<Aggregator>()("Analytics/Aggregator", {
  effect: Effect.gen(function*() {
    const transactions = yield* Transactions
    const repo = yield* AggregateRepo
    // The loop, the layout sweep and an operator rebuild never interleave their transactions.
    const lock = yield* Effect.makeSemaphore(1)

    const rebuildInTransaction = (surveyId: SurveyId) =>
      Effect.gen(function*() {
        // The aggregation's position, locked as a step locks it: a rebuild in one process and a step
        // in another (the one holding the aggregation's lease) take turns. A step that read a
        // response's former contribution before the rebuild committed, and added its change to the
        // rebuilt counters after, would count the response twice.
        yield* repo.position
        yield* repo.clearSurvey(surveyId)
        const questions = yield* repo.questionsOf(surveyId)
        const byId = new Map(questions.map((q) => [q.id, q]))
        const agg = emptyAggregates()
        let after: PagePosition | null = null
        let responses = 0
        while (true) {
          const page: Page = yield* repo.responsePage(surveyId, after, rebuildPage)
          const saved: Array<StoredContribution> = []
          for (const response of page.responses) {
            const contribution = contributionOf(byId, response)
            apply(agg, contribution, 1)
            saved.push({ responseId: response.id, surveyId, contribution })
          }
          yield* repo.saveContributions(saved)
          responses += page.responses.length
          if (page.next === null || page.responses.length < rebuildPage) break
          after = page.next
        }
        yield* repo.addDelta(surveyId, agg, signatureOf(questions))
        return responses
      })

    /** Recomputes one survey's aggregates from its responses; answers how many it read. */
    const rebuild = Effect.fn("Aggregator.rebuild")(function*(surveyId: SurveyId) {
      return yield* lock.withPermits(1)(transactions.within(rebuildInTransaction(surveyId)))
    })

    /** `rebuild` for an operator: an unknown id is an error rather than an empty survey. */
    const rebuildExisting = Effect.fn("Aggregator.rebuildExisting")(function*(surveyId: SurveyId) {
      if (!(yield* repo.surveyExists(surveyId))) {
        return yield* new UnknownSurvey({ message: `No survey with id ${JSON.stringify(surveyId)}.` })
      }
      return yield* rebuild(surveyId)
    })

    /** Recomputes every survey; changes recorded before the start are then known to be included. */
    const rebuildAll = Effect.fn("Aggregator.rebuildAll")(function*() {
      const upTo = yield* repo.latestChange
      const ids = yield* repo.surveyIds
      let responses = 0
      for (const id of ids) responses += yield* rebuild(id)
      yield* repo.setPosition(upTo)
      yield* repo.pruneChanges(0, upTo)
      yield* repo.checkpoint
      return { surveys: ids.length, responses }
    })

    /**
     * Applies the next batch of changes; answers how many change rows it consumed. How far the log
     * is settled is read first, in a short transaction of its own (`settledChanges`): saves wait
     * for that read only, not for the step's work (a rebuild included).
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

        const deltas = new Map<SurveyId, Aggregates>()
        const deltaOf = (surveyId: SurveyId) => {
          let delta = deltas.get(surveyId)
          if (delta === undefined) {
            delta = emptyAggregates()
            deltas.set(surveyId, delta)
          }
          return delta
        }
        for (const f of former) apply(deltaOf(f.surveyId), f.contribution, -1)

        // The questions and stored signatures of every survey the changes touch, each in one statement.
        const groups = Object.values(Arr.groupBy(current, (r) => r.surveyId))
        const touched = [...groups.map((responses) => responses[0].surveyId), ...former.map((f) => f.surveyId)]
        const questionsBySurvey = yield* repo.questionsOfSurveys(touched)
        const storedBySurvey = yield* repo.storedSignatures(touched)
        const questionsOf = (surveyId: SurveyId) => questionsBySurvey.get(surveyId) ?? []

        const rebuilt = new Set<SurveyId>()
        const signatures = new Map<SurveyId, string>()
        const saved: Array<StoredContribution> = []
        for (const responses of groups) {
          const surveyId = responses[0].surveyId
          const questions = questionsOf(surveyId)
          const signature = signatureOf(questions)
          signatures.set(surveyId, signature)
          const stored = storedBySurvey.get(surveyId) ?? null
          if (stored !== null && stored !== signature) {
            yield* rebuildInTransaction(surveyId)
            rebuilt.add(surveyId)
            continue
          }
          const byId = new Map(questions.map((q) => [q.id, q]))
          const delta = deltaOf(surveyId)
          for (const response of responses) {
            const contribution = contributionOf(byId, response)
            apply(delta, contribution, 1)
            saved.push({ responseId: response.id, surveyId, contribution })
          }
        }
        yield* repo.addDeltas([...deltas].filter(([surveyId]) => !rebuilt.has(surveyId)).map(([surveyId, delta]) => ({
          surveyId,
          delta,
          signature: signatures.get(surveyId) ?? signatureOf(questionsOf(surveyId))
        })))
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
      }
    })

    /** Rebuilds surveys whose questions were moved, retyped or deleted since their counters were built. */
    const sweepLayouts = Effect.fn("Aggregator.sweepLayouts")(function*() {
      const layouts = yield* repo.storedLayouts
      const stale = layouts.filter((l) => signatureOf(l.questions) !== l.signature)
      for (const l of stale) yield* rebuild(l.surveyId)
      return stale.length
    })

    return { step, catchUp, rebuild, rebuildExisting, rebuildAll, sweepLayouts } as const
  })
}) {}

/**
 * The background aggregation's jobs (src/BackgroundJobs.ts): one that follows the changes, polled
 * every 100 ms (well inside the 2 s freshness goal) by one process at a time (the others take over
 * when its lease runs out), and a layout sweep once every 30 s over all processes.
 */
export const aggregatorJobs = Effect.gen(function*() {
  const aggregator = yield* Aggregator
  const repo = yield* AggregateRepo
  // Polled every 100 ms: traced only when there is something to apply.
  const tick = Effect.gen(function*() {
    const lag = yield* repo.lag
    yield* Metric.set(aggregatorLag, lag)
    if (lag > 0) yield* traced("job analytics aggregation")(aggregator.catchUp())
  })
  return [
    yield* heldJob({
      name: "analytics aggregation",
      key: "analytics-aggregation",
      every: Duration.millis(100),
      run: tick,
      dueAt: (now) => Effect.map(Effect.orDie(repo.lag), (lag) => lag > 0 ? now : null)
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
