import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SurveyId } from "../src/Domain/Ids.js"
import { Aggregator, AggregatorLive, type RebuildBatch } from "../src/Analytics/Aggregator.js"
import { WorkBatches } from "../src/Sql/Transactions.js"
import { Analytics } from "../src/Domain/Analytics.js"
import { settleAnalytics, writeResponse } from "./support/AnalyticsWrites.js"
import { clientFor } from "./support/ApiClient.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { TestServer } from "./support/TestServer.js"
import { advance } from "./support/Advance.js"

const analytics = (surveyId = "srv_main", token: string = TOKENS.editor) =>
  Effect.flatMap(clientFor(token), (api) => api.analytics.get({ path: { id: SurveyId.make(surveyId) } }))

const question = (body: Analytics, id: string) => {
  const found = body.questions.find((q) => q.id === id)
  if (found === undefined) throw new Error(`no analytics for ${id}`)
  return found
}

const catchUp = Effect.flatMap(Aggregator, (a) => a.catchUp())

layer(TestServer(baseFixture))("GET /api/v1/surveys/{id}/analytics", (it) => {
  it.effect("answers zeros before the aggregator ran, then the imported responses", () =>
    Effect.gen(function*() {
      const before = yield* analytics()
      expect(before.responseCount).toBe(0)
      expect(before.completionRate).toBeNull()
      expect(before.questions.map((q) => q.id)).toEqual(["q_text", "q_pick", "q_rank", "q_num"])
      expect(question(before, "q_num").numeric).toEqual({
        count: 0,
        mean: 0,
        median: null,
        min: null,
        max: null,
        standardDeviation: null
      })

      yield* catchUp
      const data = yield* analytics()
      expect(data.responseCount).toBe(3)
      expect(data.completedCount).toBe(2)
      expect(data.incompleteCount).toBe(1)
      expect(data.completionRate).toBeCloseTo(2 / 3, 12)
      // rsp_2 is incomplete and answered q_pick (order 3): it reached q_text and q_pick only.
      expect(question(data, "q_text")).toEqual({
        id: "q_text",
        respondentCount: 1,
        skippedCount: 2,
        textAnswerCount: 1,
        options: [],
        numeric: null,
        ranking: null
      })
      expect(question(data, "q_pick")).toMatchObject({
        respondentCount: 2,
        skippedCount: 1,
        textAnswerCount: 0,
        options: [{ value: "a", label: "A", count: 1 }, { value: "b", label: "B", count: 1 }, {
          value: "c",
          label: "C",
          count: 1
        }],
        numeric: null,
        ranking: null
      })
      expect(question(data, "q_rank")).toMatchObject({
        respondentCount: 2,
        skippedCount: 0,
        options: [{ value: "x", label: "X", count: 1 }, { value: "y", label: "Y", count: 2 }],
        ranking: [{ value: "x", label: "X", count: 1, averageRank: 1 }, {
          value: "y",
          label: "Y",
          count: 2,
          averageRank: 1.5
        }]
      })
      expect(question(data, "q_num")).toMatchObject({
        respondentCount: 1,
        skippedCount: 1,
        numeric: { count: 1, mean: 42, median: 42, min: 42, max: 42, standardDeviation: null }
      })
    }))

  it.effect("applies a response completed later exactly once", () =>
    Effect.gen(function*() {
      yield* catchUp
      // rsp_2 is finished later with a number; the aggregator replaces its former contribution.
      yield* writeResponse({
        id: "rsp_2",
        surveyId: "srv_main",
        completed: true,
        createdAt: "2026-01-11T00:00:00.000Z",
        answers: [{ questionId: "q_pick", values: ["b", "c"] }, { questionId: "q_num", values: ["8"] }]
      })
      yield* catchUp
      const data = yield* analytics()
      expect([data.responseCount, data.completedCount, data.incompleteCount]).toEqual([3, 3, 0])
      expect(question(data, "q_pick").options.map((o) => o.count)).toEqual([1, 1, 2])
      expect(question(data, "q_rank").skippedCount).toBe(1)
      const numeric = question(data, "q_num").numeric
      expect(numeric).toMatchObject({ count: 2, mean: 25, median: 25, min: 8, max: 42 })
      expect(numeric?.standardDeviation).toBeCloseTo(Math.sqrt(578), 9)
      // Running again changes nothing: every change is applied once.
      yield* catchUp
      expect(yield* analytics()).toEqual(data)
    }))

  it.effect("rebuilds a survey whose questions were deleted or moved", () =>
    Effect.gen(function*() {
      yield* catchUp
      const sql = yield* SqlClient.SqlClient
      yield* sql`UPDATE questions SET deleted = 1 WHERE id = 'q_text'`
      yield* sql`UPDATE questions SET position = 1 WHERE id = 'q_num'`
      const before = yield* analytics()
      const rebuilt = yield* Effect.flatMap(Aggregator, (a) => a.sweepLayouts())
      expect(rebuilt).toBe(1)
      // Until the rebuild is done: the former counters, said to be stale.
      const meanwhile = yield* analytics()
      expect(meanwhile.stale).toBe(true)
      expect(meanwhile.responseCount).toBe(before.responseCount)
      expect(question(meanwhile, "q_pick")).toEqual(question(before, "q_pick"))
      yield* settleAnalytics
      const data = yield* analytics()
      expect(data.stale).toBe(false)
      expect(data.questions.map((q) => q.id)).toEqual(["q_num", "q_pick", "q_rank"])
      const fromScratch = yield* Effect.flatMap(Aggregator, (a) => a.rebuild(SurveyId.make("srv_main")))
      expect(fromScratch).toBe(3)
      expect(yield* analytics()).toEqual(data)
    }))

  it.effect("the operator's rebuild follows a serving process that works on it, and works alone when none does", () =>
    Effect.gen(function*() {
      yield* catchUp
      const aggregator = yield* Aggregator
      const srv = SurveyId.make("srv_main")
      const expected = yield* analytics()
      const oneByOne = Effect.provideService(WorkBatches, { ...(yield* WorkBatches), rebuild: 1 })
      const heard: Array<RebuildBatch> = []
      const hear = (batch: RebuildBatch) => Effect.sync(() => heard.push(batch))

      // Beside a server: in each of the command's pauses the server's background loop does a batch.
      const beside = yield* aggregator.rebuild(srv, hear, Effect.orDie(Effect.asVoid(aggregator.rebuildStep()))).pipe(oneByOne)
      expect(beside).toBe(3)
      // It only followed: no batch of its own, the last one included.
      expect(heard.map((batch) => [batch.passed, batch.done])).toEqual([[1, false], [2, false], [3, false]])
      expect(yield* analytics()).toEqual(expected)

      // Alone: nobody moves the rebuild on during its pauses, so it does every batch.
      heard.length = 0
      const alone = yield* aggregator.rebuild(srv, hear, Effect.void).pipe(oneByOne)
      expect(alone).toBe(3)
      expect(heard.at(-1)?.done).toBe(true)
      expect(yield* analytics()).toEqual(expected)
    }))

  it.effect("answers 401, 403 and 404 like the other survey endpoints", () =>
    Effect.gen(function*() {
      const anonymous = yield* clientFor()
      const unauthorized = yield* Effect.flip(anonymous.analytics.get({ path: { id: SurveyId.make("srv_main") } }))
      expect(unauthorized._tag).toBe("Unauthorized")
      expect((yield* Effect.flip(analytics("srv_draft", TOKENS.limited)))._tag).toBe("Forbidden")
      expect((yield* Effect.flip(analytics("srv_other")))._tag).toBe("NotFound")
      expect((yield* Effect.flip(analytics("srv_trashed")))._tag).toBe("NotFound")
      expect(yield* analytics("srv_main", TOKENS.viewer)).toBeInstanceOf(Analytics)
    }))
})

layer(TestServer(baseFixture))("the background aggregator", (it) => {
  it.effect("includes new responses on its polling schedule", () =>
    Effect.gen(function*() {
      yield* Layer.launch(AggregatorLive).pipe(Effect.forkScoped)
      yield* advance("1 second")
      expect((yield* analytics()).responseCount).toBe(3)
      yield* writeResponse({
        id: "rsp_new",
        surveyId: "srv_main",
        completed: true,
        createdAt: "2026-02-01T00:00:00.000Z",
        answers: [{ questionId: "q_text", values: ["later"] }]
      })
      yield* advance("1 second")
      const data = yield* analytics()
      expect(data.responseCount).toBe(4)
      expect(question(data, "q_text").textAnswerCount).toBe(2)
    }).pipe(Effect.scoped))
})
