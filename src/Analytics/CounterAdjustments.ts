import { Clock, Effect } from "effect"
import type { ResponseId, SurveyId } from "../Domain/Ids.js"
import { toIso } from "../Domain/Time.js"
import { AggregateRepo } from "./AggregateRepo.js"
import { type Aggregates, apply, emptyAggregates, signatureOf } from "./Compute.js"
import { countedIn, neverRebuilt, RebuildRepo } from "./RebuildRepo.js"

/**
 * What a change elsewhere does to the stored analytics, inside the caller's transaction (it opens
 * none of its own): a deletion subtracts its responses' contributions, an edit of a survey's
 * questions asks for the rebuild of its counters with the change.
 */
export class CounterAdjustments extends Effect.Service<CounterAdjustments>()("Analytics/CounterAdjustments", {
  effect: Effect.gen(function*() {
    const aggregates = yield* AggregateRepo
    const rebuilds = yield* RebuildRepo

    /**
     * Subtracts what these responses contributed from the counters they are counted in and
     * forgets their contributions (a deletion's). The surveys' rebuild rows are read for share: a
     * rebuild's batch, which locks its row for update, does not move the counters from under it.
     */
    const forget = (ids: ReadonlyArray<ResponseId>) =>
      Effect.gen(function*() {
        const former = yield* aggregates.contributionsOf(ids)
        const states = yield* rebuilds.states(former.map((f) => f.surveyId), "share")
        const deltas = new Map<SurveyId, Aggregates>()
        for (const f of former) {
          const state = states.get(f.surveyId) ?? neverRebuilt(f.surveyId)
          const key = countedIn(state, f.generation)
          if (key === null) continue
          const delta = deltas.get(key) ?? emptyAggregates()
          deltas.set(key, delta)
          apply(delta, f.contribution, -1)
        }
        const signatures = yield* aggregates.storedSignatures([...deltas.keys()])
        yield* aggregates.addDeltas([...deltas].flatMap(([key, delta]) => {
          const signature = signatures.get(key)
          return signature === undefined ? [] : [{ surveyId: key, delta, signature }]
        }))
        yield* aggregates.deleteContributions(ids)
      })

    const layoutOf = (surveyId: SurveyId) => Effect.map(aggregates.questionsOf(surveyId), signatureOf)

    /**
     * Runs `edit`, a change to the survey's questions. When it changed what is counted (a
     * question added, removed, moved or retyped), the survey's analytics are rebuilt in the
     * background, asked for with the change; labels, options and `required` change no counter.
     */
    const editingQuestions = <A, E, R>(surveyId: SurveyId, edit: Effect.Effect<A, E, R>) =>
      Effect.gen(function*() {
        const before = yield* layoutOf(surveyId)
        const edited = yield* edit
        const after = yield* layoutOf(surveyId)
        if (after !== before) yield* rebuilds.request(surveyId, after, toIso(yield* Clock.currentTimeMillis))
        return edited
      })

    return { forget, editingQuestions } as const
  })
}) {}
