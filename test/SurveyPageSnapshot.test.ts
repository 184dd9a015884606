import { expect, layer } from "@effect/vitest"
import { Effect, Ref, Schema } from "effect"
import { baseFixture } from "./support/Fixtures.js"
import { outsideStatements } from "./support/OutsideStatements.js"
import { bodyOf, call, TestServer } from "./support/TestServer.js"

const PageData = Schema.Struct({
  survey: Schema.Struct({ questionCount: Schema.Number }),
  questions: Schema.Array(Schema.Struct({ id: Schema.String, type: Schema.String }))
})

// What an import that adds or removes a question writes: the question and the survey's count, together.
const addQuestion = `BEGIN;
  INSERT INTO questions (id, survey_id, type, label, position) VALUES ('q_extra', 'srv_main', 'textarea', 'Extra', 7);
  UPDATE surveys SET question_count = question_count + 1 WHERE id = 'srv_main';
  COMMIT;`
const removeQuestion = `BEGIN;
  DELETE FROM questions WHERE id = 'q_extra';
  UPDATE surveys SET question_count = question_count - 1 WHERE id = 'srv_main';
  COMMIT;`

const changes = 150

layer(TestServer(baseFixture))("the survey page read while its questions change", (it) => {
  it.effect("shows the survey and its questions of one moment: questionCount counts the questions shown", () =>
    Effect.gen(function*() {
      const outside = yield* outsideStatements
      const done = yield* Ref.make(false)
      const writer = Effect.gen(function*() {
        for (let i = 0; i < changes; i++) {
          yield* outside(i % 2 === 0 ? addQuestion : removeQuestion)
          yield* Effect.yieldNow()
        }
      }).pipe(Effect.ensuring(Ref.set(done, true)))
      const pages: Array<typeof PageData.Type> = []
      const reader = Effect.gen(function*() {
        // Bounded by the writer's end and by count.
        while (!(yield* Ref.get(done)) && pages.length < 20 * changes) {
          const res = yield* call("GET", "/s/srv_main", { headers: { accept: "application/json" } })
          expect(res.status).toBe(200)
          pages.push(bodyOf(PageData, res))
        }
      })
      yield* Effect.all([writer, reader, reader, reader], { concurrency: "unbounded", discard: true })
      const mixed = pages.filter((page) =>
        page.survey.questionCount !== page.questions.filter((q) => q.type !== "section").length
      )
      expect(pages.length).toBeGreaterThan(0)
      expect({ pages: pages.length, mixed: mixed.length, first: mixed[0] }).toEqual({
        pages: pages.length,
        mixed: 0,
        first: undefined
      })
    }).pipe(Effect.scoped), 120_000)
})
