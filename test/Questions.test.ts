import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SurveyId } from "../src/Domain/Ids.js"
import { clientFor } from "./support/ApiClient.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { TestServer } from "./support/TestServer.js"

layer(TestServer(baseFixture))("questions", (it) => {
  it.effect("returns every question in survey order, never sections or deleted questions", () =>
    Effect.gen(function*() {
      const api = yield* clientFor(TOKENS.editor)
      const list = yield* api.questions.list({ path: { id: SurveyId.make("srv_main") } })
      expect(list).toEqual({
        data: [
          { id: "q_text", type: "textarea", label: "Say something", required: false, allowMultiple: false, order: 2, options: [] },
          {
            id: "q_pick",
            type: "checkbox",
            label: "Pick",
            required: true,
            allowMultiple: true,
            order: 3,
            options: [{ value: "a", label: "A" }, { value: "b", label: "B" }, { value: "c", label: "C" }]
          },
          {
            id: "q_rank",
            type: "sort",
            label: "Rank",
            required: false,
            allowMultiple: false,
            order: 4,
            options: [{ value: "x", label: "X" }, { value: "y", label: "Y" }]
          },
          { id: "q_num", type: "number", label: "How many", required: false, allowMultiple: false, order: 5, options: [] }
        ]
      })
    }))

  it.effect("a survey without questions answers an empty list; unknown surveys 404", () =>
    Effect.gen(function*() {
      const api = yield* clientFor(TOKENS.editor)
      const questions = (id: string) => api.questions.list({ path: { id: SurveyId.make(id) } })
      expect(yield* questions("srv_draft")).toEqual({ data: [] })
      expect((yield* Effect.flip(questions("srv_trashed")))._tag).toBe("NotFound")
      expect((yield* Effect.flip(questions("srv_other")))._tag).toBe("NotFound")
    }))
})
