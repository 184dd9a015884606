import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { get, TestServer } from "./support/TestServer.js"

layer(TestServer(baseFixture))("questions", (it) => {
  it.effect("returns every question in survey order, never sections or deleted questions", () =>
    Effect.gen(function*() {
      const res = yield* get("/api/v1/surveys/srv_main/questions", TOKENS.editor)
      expect(res.status).toBe(200)
      expect(res.body).toEqual({
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
      expect((yield* get("/api/v1/surveys/srv_draft/questions", TOKENS.editor)).body).toEqual({ data: [] })
      expect((yield* get("/api/v1/surveys/srv_trashed/questions", TOKENS.editor)).status).toBe(404)
      expect((yield* get("/api/v1/surveys/srv_other/questions", TOKENS.editor)).status).toBe(404)
    }))
})
