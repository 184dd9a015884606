import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, FastCheck as fc, Schema } from "effect"
import { AggregateRepo } from "../src/Analytics/AggregateRepo.js"
import { Aggregator } from "../src/Analytics/Aggregator.js"
import { aggregate, type QuestionDef, type ResponseInput } from "../src/Analytics/Compute.js"
import { RebuildRepo, shadowOf } from "../src/Analytics/RebuildRepo.js"
import { ResponseId, SurveyId, WorkspaceId } from "../src/Domain/Ids.js"
import { ResponseDeletion } from "../src/Responses/ResponseDeletion.js"
import { expectClose, plainAggregates } from "./support/AnalyticsOracle.js"
import { writeResponse } from "./support/AnalyticsWrites.js"
import { Count } from "./support/StoredRows.js"
import { decodeAs, TestDatabase } from "./support/TestServer.js"

/** The survey's questions: a number, a checkbox, a text, a sort; their layout changes during the run. */
const initialQuestions: ReadonlyArray<QuestionDef> = [
  { id: "n", type: "number", position: 1, deleted: false, options: [] },
  { id: "c", type: "checkbox", position: 2, deleted: false, options: [{ value: "a", label: "A" }, { value: "b", label: "B" }] },
  { id: "t", type: "textarea", position: 3, deleted: false, options: [] },
  { id: "s", type: "sort", position: 4, deleted: false, options: [{ value: "x", label: "X" }, { value: "y", label: "Y" }] }
]

const answersArb = fc.record({
  n: fc.option(fc.oneof(fc.integer({ min: -9, max: 9 }).map(String), fc.constant("x")), { nil: undefined }),
  c: fc.option(fc.subarray(["a", "b"]), { nil: undefined }),
  t: fc.option(fc.constantFrom("", "hi", "yo"), { nil: undefined }),
  s: fc.option(fc.shuffledSubarray(["x", "y"]), { nil: undefined })
}).map((r) =>
  Object.entries(r).flatMap(([questionId, value]) =>
    value === undefined ? [] : [{ questionId, values: typeof value === "string" ? [value] : value }]
  )
)

const target = fc.integer({ min: 0, max: 11 })

/** A change of the question layout, as a PUT that changes what is counted makes one. */
const relayoutArb = fc.oneof(
  fc.record({ kind: fc.constant("move" as const), question: fc.constantFrom("n", "c", "t", "s"), position: fc.integer({ min: 1, max: 5 }) }),
  fc.record({ kind: fc.constant("toggle" as const), question: fc.constantFrom("n", "c", "t", "s") }),
  fc.record({ kind: fc.constant("retype" as const), type: fc.constantFrom("number" as const, "textarea" as const, "scale" as const) })
)

const opArb = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant("write" as const), target, completed: fc.boolean(), minute: fc.integer({ min: 0, max: 9 }), answers: answersArb }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("delete" as const), target }) },
  { weight: 3, arbitrary: fc.constant({ kind: "step" as const }) },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant("batch" as const), size: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("relayout" as const), change: relayoutArb }) }
)

const scenarioArb = fc.record({
  before: fc.array(fc.record({ target, completed: fc.boolean(), minute: fc.integer({ min: 0, max: 9 }), answers: answersArb }), { maxLength: 10 }),
  first: relayoutArb,
  ops: fc.array(opArb, { maxLength: 40 })
})

const Setup = TestDatabase({
  accounts: [{ id: "acc_r", planId: "pro" }],
  workspaces: [{ id: "ws_r", ownerAccountId: "acc_r" }]
})

let run = 0

layer(Setup)("a survey's batched rebuild", (it) => {
  it.effect.prop(
    "with saves, deletions, aggregator steps and newer layout changes racing its batches, the answered counters stay those before the change until it is done, and are then exactly a full recompute",
    { scenario: scenarioArb },
    ({ scenario }) =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const aggregator = yield* Aggregator
        const repo = yield* AggregateRepo
        const rebuilds = yield* RebuildRepo
        const deletion = yield* ResponseDeletion
        const surveyId = SurveyId.make(`srv_rb${run++}`)
        const qid = (id: string) => `${surveyId}_${id}`
        yield* sql`INSERT INTO surveys (id, workspace_id, title, status, created_at, updated_at)
          VALUES (${surveyId}, 'ws_r', 'R', 'published', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')`
        for (const q of initialQuestions) {
          yield* sql`INSERT INTO questions (id, survey_id, type, label, position, options) VALUES
            (${qid(q.id)}, ${surveyId}, ${q.type}, ${q.id}, ${q.position}, ${JSON.stringify(q.options)})`
        }
        const model = new Map<number, ResponseInput>()
        const write = (op: { target: number; completed: boolean; minute: number; answers: ReadonlyArray<{ questionId: string; values: ReadonlyArray<string> }> }) =>
          Effect.gen(function*() {
            const answers = op.answers.map((a) => ({ ...a, questionId: qid(a.questionId) }))
            // A response keeps its creation instant; a new one may sort before the walk's position.
            model.set(op.target, { completed: op.completed, answers })
            yield* writeResponse({
              id: `${surveyId}_r${String(op.target).padStart(2, "0")}`,
              surveyId,
              completed: op.completed,
              createdAt: `2026-01-02T00:0${op.minute}:00.000Z`,
              answers
            })
          })
        const questionsNow = () => repo.questionsOf(surveyId)
        // A PUT's transaction: the questions and the request of a rebuild together.
        const relayout = (change: typeof scenario.first) =>
          sql.withTransaction(Effect.gen(function*() {
            if (change.kind === "move") {
              yield* sql`UPDATE questions SET position = ${change.position} WHERE id = ${qid(change.question)}`
            } else if (change.kind === "toggle") {
              yield* sql`UPDATE questions SET deleted = 1 - deleted WHERE id = ${qid(change.question)}`
            } else {
              yield* sql`UPDATE questions SET type = ${change.type} WHERE id = ${qid("t")}`
            }
            yield* aggregator.requestRebuild(surveyId)
          }))

        for (const op of scenario.before) yield* write(op)
        yield* aggregator.catchUp()
        const frozen = plainAggregates((yield* repo.load(surveyId)).aggregates)
        yield* relayout(scenario.first)

        let rebuilding = true
        for (const op of scenario.ops) {
          switch (op.kind) {
            case "write":
              yield* write(op)
              break
            case "delete": {
              const existed = yield* deletion.deleteOne({
                workspaceId: WorkspaceId.make("ws_r"),
                surveyId,
                responseId: ResponseId.make(`${surveyId}_r${String(op.target).padStart(2, "0")}`)
              })
              expect(existed).toBe(model.delete(op.target))
              break
            }
            case "step":
              yield* aggregator.step()
              break
            case "batch":
              yield* aggregator.rebuildStep(op.size)
              break
            case "relayout":
              if (rebuilding) yield* relayout(op.change)
              break
          }
          if (rebuilding) {
            const state = yield* rebuilds.stateOf(surveyId)
            if (state.active) {
              // Never a mix: while the rebuild runs, the counters answered are those before the change.
              expectClose(plainAggregates((yield* repo.load(surveyId)).aggregates), frozen)
              expect((yield* repo.snapshot(surveyId)).rebuilding).toBe(true)
            } else {
              rebuilding = false
            }
          }
        }

        // Settled: every change applied and the rebuild (or its newest restart) finished.
        yield* aggregator.catchUp()
        for (let round = 0; round < 200 && (yield* aggregator.rebuildStep(2)) !== undefined; round++);
        yield* aggregator.catchUp()
        const state = yield* rebuilds.stateOf(surveyId)
        expect(state.active).toBe(false)
        expect(state.liveGeneration).toBe(state.generation)
        const snapshot = yield* repo.snapshot(surveyId)
        expect(snapshot.rebuilding).toBe(false)
        const questions = yield* questionsNow()
        expectClose(plainAggregates(snapshot.stored.aggregates), plainAggregates(aggregate(questions, [...model.values()])))
        // The rebuild's own counters went with it.
        const left = decodeAs(
          Schema.Array(Count),
          yield* sql`SELECT count(*) AS n FROM analytics_surveys WHERE survey_id = ${shadowOf(surveyId)}`
        )
        expect(left[0]?.n).toBe(0)
      }).pipe(Effect.orDie),
    { fastCheck: { numRuns: 50 }, timeout: 300_000 }
  )
})
