import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Aggregator } from "../src/Analytics/Aggregator.js"
import { settleAnalytics, writeResponse } from "./support/AnalyticsWrites.js"
import { SurveyId } from "../src/Domain/Ids.js"
import { clientFor } from "./support/ApiClient.js"
import { TOKENS } from "./support/Fixtures.js"
import { respondentFixture } from "./support/RespondentFixtures.js"
import { bodyOf, call, decodeAs, TestServer } from "./support/TestServer.js"

const Rows = Schema.Array(Schema.Record({ key: Schema.String, value: Schema.Unknown }))

type Body = Record<string, unknown>

const send = (method: "POST" | "PUT", path: string, body: Body) =>
  call(method, `/api/v1${path}`, { token: TOKENS.editor, body: JSON.stringify(body) })

const putQuestions = (id: string, questions: ReadonlyArray<Body>) => send("PUT", `/surveys/${id}/questions`, { questions })

const editor = clientFor(TOKENS.editor)

const analytics = (id: string) => Effect.flatMap(editor, (api) => api.analytics.get({ path: { id: SurveyId.make(id) } }))

/** Every stored analytics row of the survey (counters, contributions, rebuild state), in a fixed order. */
const storedAnalytics = (surveyId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const read = (table: string, order: string) =>
      Effect.map(sql`SELECT * FROM ${sql(table)} WHERE survey_id = ${surveyId} ORDER BY ${sql.literal(order)}`, (rows) => decodeAs(Rows, rows))
    return {
      surveys: yield* read("analytics_surveys", "survey_id"),
      reach: yield* read("analytics_reach", "position"),
      questions: yield* read("analytics_questions", "question_id"),
      options: yield* read("analytics_options", "question_id, value"),
      numbers: yield* read("analytics_numbers", "question_id, num"),
      contributions: yield* read("analytics_contributions", "response_id"),
      rebuilds: yield* read("analytics_rebuilds", "survey_id")
    }
  }).pipe(Effect.orDie)

/** srv_main's current list, as a PUT body names it. */
const mainList = (edit: { readonly label?: string; readonly required?: boolean; readonly optionLabel?: string; readonly extraOption?: boolean } = {}) => [
  { id: "q_section", type: "section", label: "Part one" },
  { id: "q_text", type: "textarea", label: edit.label ?? "Say something", required: edit.required ?? false },
  {
    id: "q_pick",
    type: "checkbox",
    label: "Pick",
    required: true,
    allowMultiple: true,
    options: [
      { value: "a", label: edit.optionLabel ?? "A" },
      { value: "b", label: "B" },
      { value: "c", label: "C" },
      ...(edit.extraOption === true ? [{ value: "d", label: "D" }] : [])
    ]
  },
  { id: "q_rank", type: "sort", label: "Rank", options: [{ value: "x", label: "X" }, { value: "y", label: "Y" }] },
  { id: "q_num", type: "number", label: "How many" }
]

layer(TestServer(respondentFixture))("question edits and the stored analytics", (it) => {
  it.effect("an edit that changes nothing counted (labels, required, option labels, options added, the same list) writes no analytics row and starts no rebuild", () =>
    Effect.gen(function*() {
      // A survey with more responses than one rebuild batch, its analytics current.
      for (let i = 0; i < 300; i++) {
        yield* writeResponse({
          id: `rsp_many_${String(i).padStart(3, "0")}`,
          surveyId: "srv_main",
          completed: i % 3 !== 0,
          createdAt: `2026-01-03T00:00:${String(i % 60).padStart(2, "0")}.${String(i).padStart(3, "0")}Z`,
          answers: [{ questionId: "q_pick", values: i % 2 === 0 ? ["a"] : ["b", "c"] }, { questionId: "q_num", values: [String(i)] }]
        })
      }
      yield* settleAnalytics
      const before = yield* storedAnalytics("srv_main")
      const figures = yield* analytics("srv_main")
      expect(figures.stale).toBe(false)
      expect(figures.responseCount).toBe(303)

      for (
        const list of [
          mainList({ label: "Say something else" }),
          mainList({ label: "Say something else", required: true }),
          mainList({ optionLabel: "Option A" }),
          mainList({ extraOption: true }),
          mainList({ extraOption: true })
        ]
      ) {
        const put = yield* putQuestions("srv_main", list)
        expect(put.status, put.text).toBe(200)
        expect(yield* storedAnalytics("srv_main")).toEqual(before)
        const after = yield* analytics("srv_main")
        expect(after.stale).toBe(false)
        expect(after.questions.map((q) => [q.id, q.respondentCount, q.skippedCount]))
          .toEqual(figures.questions.map((q) => [q.id, q.respondentCount, q.skippedCount]))
      }
      // Nothing waits for the aggregator either.
      expect(yield* Effect.flatMap(Aggregator, (a) => a.rebuildRound())).toBe(0)
    }))

  it.effect("an edit that changes what is counted answers at once; the analytics stay the former ones, said stale, until the background rebuild is done", () =>
    Effect.gen(function*() {
      yield* settleAnalytics
      const before = yield* analytics("srv_main")
      const put = yield* putQuestions("srv_main", [...mainList(), { id: "q_added", type: "email", label: "New" }])
      expect(put.status, put.text).toBe(200)
      const meanwhile = yield* analytics("srv_main")
      expect(meanwhile.stale).toBe(true)
      expect(meanwhile.responseCount).toBe(before.responseCount)
      const stored = yield* storedAnalytics("srv_main")
      expect(stored.rebuilds).toHaveLength(1)
      expect(stored.rebuilds[0]?.["active"]).toBe(1)

      // A newer edit starts it again.
      const generation = stored.rebuilds[0]?.["generation"]
      const again = yield* putQuestions("srv_main", [...mainList(), { id: "q_added", type: "textarea", label: "New" }])
      expect(again.status, again.text).toBe(200)
      expect((yield* storedAnalytics("srv_main")).rebuilds[0]?.["generation"]).toBe(Number(generation) + 1)

      yield* settleAnalytics
      const done = yield* analytics("srv_main")
      expect(done.stale).toBe(false)
      expect(done.responseCount).toBe(before.responseCount)
      expect(done.questions.map((q) => q.id)).toEqual([...before.questions.map((q) => q.id), "q_added"])
      const counts = (questions: typeof done.questions) => questions.map((q) => [q.id, q.respondentCount, q.skippedCount])
      expect(counts(done.questions.filter((q) => q.id !== "q_added"))).toEqual(counts(before.questions))
      expect((yield* storedAnalytics("srv_main")).rebuilds[0]?.["active"]).toBe(0)
    }))

  it.effect("a save racing a type change is stored under the question list it was validated against: never a text answer under a number question", () =>
    Effect.gen(function*() {
      for (let round = 0; round < 8; round++) {
        const api = yield* editor
        const { id } = yield* api.authoring.create({
          payload: { title: `Type race ${round}`, questions: [{ id: "q_t", type: "textarea", label: "T" }] },
          headers: {}
        })
        expect((yield* api.authoring.publish({ path: { id }, headers: {} })).status).toBe("published")
        const token = bodyOf(
          Schema.Struct({ respondentToken: Schema.String }),
          yield* call("GET", `/s/${id}`, { headers: { accept: "application/json" } })
        ).respondentToken
        const save = call("POST", "/respond/v1/responses", {
          token,
          body: JSON.stringify({ answers: [{ questionId: "q_t", values: ["not a number"] }], finished: true })
        })
        const retype = putQuestions(id, [{ id: "q_t", type: "number", label: "T" }])
        const [saved, put] = yield* Effect.all([save, retype], { concurrency: "unbounded" })
        const sql = yield* SqlClient.SqlClient
        const type = decodeAs(
          Schema.Array(Schema.Struct({ type: Schema.String })),
          yield* sql`SELECT type FROM questions WHERE survey_id = ${id} AND id = 'q_t'`
        )[0]?.type
        const answers = decodeAs(
          Schema.Array(Schema.Struct({ n: Schema.Number })),
          yield* sql`SELECT COUNT(*) AS n FROM answers a JOIN responses r ON r.id = a.response_id WHERE r.survey_id = ${id}`
        )[0]?.n
        if (type === "number") {
          // The type change came first: the save was checked against it and refused.
          expect(put.status, put.text).toBe(200)
          expect(saved.status, saved.text).toBe(400)
          expect(answers).toBe(0)
        } else {
          // The save came first: the type change found an answer and was refused.
          expect(type).toBe("textarea")
          expect(saved.status, saved.text).toBe(201)
          expect(put.status, put.text).toBe(400)
          expect(answers).toBe(1)
        }
      }
    }).pipe(Effect.orDie))
})
