import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { FixtureInput } from "../src/Fixtures/Fixture.js"
import { ResponseId, SurveyId } from "../src/Domain/Ids.js"
import { ResponsePage, ResponsePageParams } from "../src/Responses/Api.js"
import { clientFor } from "./support/ApiClient.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { get, TestServer } from "./support/TestServer.js"

const main = { id: SurveyId.make("srv_main") }
const responseOf = (survey: string, response: string) => ({
  path: { id: SurveyId.make(survey), responseId: ResponseId.make(response) }
})

layer(TestServer(baseFixture))("responses", (it) => {
  it.effect("one response with every field, answers in question order, deleted questions last with null ids", () =>
    Effect.gen(function*() {
      // Raw: the exact wire form, no field more; the typed client would drop one it does not know.
      const res = yield* get("/api/v1/surveys/srv_main/responses/rsp_1", TOKENS.editor)
      expect(res.status).toBe(200)
      expect(res.body).toEqual({
        id: "rsp_1",
        surveyId: "srv_main",
        externalUserId: "user-1",
        completed: true,
        completedAt: "2026-01-10T00:05:00.000Z",
        createdAt: "2026-01-10T00:00:00.000Z",
        updatedAt: "2026-01-10T00:05:00.000Z",
        answers: [
          { fieldId: "q_text", type: "textarea", value: "hello", values: ["hello"] },
          { fieldId: "q_pick", type: "checkbox", value: "[\"a\",\"c\"]", values: ["a", "c"] },
          { fieldId: "q_rank", type: "sort", value: "y", values: ["y"] },
          { fieldId: "q_num", type: "number", value: "42", values: ["42"] },
          { fieldId: null, type: null, value: "old@example.com", values: ["old@example.com"] }
        ]
      })
    }))

  it.effect("an incomplete response has completed false and completedAt null; a single choice is a plain value", () =>
    Effect.gen(function*() {
      const api = yield* clientFor(TOKENS.editor)
      const response = yield* api.responses.get(responseOf("srv_main", "rsp_2"))
      expect(response).toMatchObject({
        completed: false,
        completedAt: null,
        externalUserId: null,
        answers: [{ fieldId: "q_pick", type: "checkbox", value: "b", values: ["b"] }]
      })
    }))

  it.effect("404 for a response of another survey or a missing one", () =>
    Effect.gen(function*() {
      const api = yield* clientFor(TOKENS.editor)
      for (const [survey, response] of [["srv_draft", "rsp_1"], ["srv_main", "rsp_nope"], ["srv_other", "rsp_1"]] as const) {
        const error = yield* Effect.flip(api.responses.get(responseOf(survey, response)))
        expect(error._tag, `${survey}/${response}`).toBe("NotFound")
      }
    }))

  it.effect("lists oldest first and filters by status and createdAfter (inclusive)", () =>
    Effect.gen(function*() {
      const api = yield* clientFor(TOKENS.editor)
      const ids = (urlParams: typeof ResponsePageParams.Type) =>
        Effect.map(api.responses.list({ path: main, urlParams }), (page) => page.data.map((r) => r.id))
      expect(yield* ids({})).toEqual(["rsp_1", "rsp_2", "rsp_3"])
      expect(yield* ids({ status: "all" })).toEqual(["rsp_1", "rsp_2", "rsp_3"])
      expect(yield* ids({ status: "completed" })).toEqual(["rsp_1", "rsp_3"])
      expect(yield* ids({ status: "incomplete" })).toEqual(["rsp_2"])
      expect(yield* ids({ createdAfter: "2026-01-11T00:00:00.000Z" })).toEqual(["rsp_2", "rsp_3"])
      // The same instant with another offset, and without milliseconds.
      expect(yield* ids({ createdAfter: "2026-01-11T01:00:00+01:00" })).toEqual(["rsp_2", "rsp_3"])
      expect(yield* ids({ createdAfter: "2026-01-11T00:00:00.001Z", status: "completed" })).toEqual(["rsp_3"])
    }))

  it.effect("bad filters answer 400 invalid_request naming the parameter", () =>
    Effect.gen(function*() {
      const path = "/api/v1/surveys/srv_main/responses"
      for (
        const [query, param] of [
          ["status=done", "status"],
          ["createdAfter=yesterday", "createdAfter"],
          ["createdAfter=2026-01-11", "createdAfter"],
          ["createdAfter=2026-13-45T00:00:00Z", "createdAfter"],
          ["limit=1000", "limit"],
          ["cursor=abc", "cursor"]
        ] as const
      ) {
        const res = yield* get(`${path}?${query}`, TOKENS.editor)
        expect(res.status, query).toBe(400)
        expect(res.body).toMatchObject({ code: "invalid_request", issues: [{ path: param }] })
      }
    }))

  it.effect("a cursor is bound to its survey and filter", () =>
    Effect.gen(function*() {
      const api = yield* clientFor(TOKENS.editor)
      const page = yield* api.responses.list({ path: main, urlParams: { limit: 1, status: "completed" } })
      expect(page.nextCursor).not.toBeNull()
      const cursor = page.nextCursor ?? ""
      const next = yield* api.responses.list({ path: main, urlParams: { limit: 1, status: "completed", cursor } })
      expect(next.data.map((r) => r.id)).toEqual(["rsp_3"])
      const otherFilter = yield* Effect.flip(api.responses.list({ path: main, urlParams: { limit: 1, status: "all", cursor } }))
      expect(otherFilter._tag).toBe("InvalidRequest")
      const otherSurvey = yield* Effect.flip(
        api.responses.list({ path: { id: SurveyId.make("srv_draft") }, urlParams: { cursor } })
      )
      expect(otherSurvey._tag).toBe("InvalidRequest")
    }))
})

const walkSurvey = "srv_walk"
const walk = { id: SurveyId.make(walkSurvey) }
const walkFixture: FixtureInput = {
  ...baseFixture,
  surveys: [...(baseFixture.surveys ?? []), {
    id: walkSurvey,
    workspaceId: "ws_a",
    title: "Walk",
    status: "published",
    createdAt: "2026-02-01T00:00:00.000Z",
    updatedAt: "2026-02-01T00:00:00.000Z",
    questions: [{ id: "q_walk", type: "number", label: "n", order: 1 }]
  }],
  responses: Array.from({ length: 300 }, (_, i) => ({
    id: `rsp_walk_${String(i).padStart(3, "0")}`,
    surveyId: walkSurvey,
    // Several responses share each instant, so the id breaks ties.
    createdAt: new Date(Date.UTC(2026, 1, 2) + Math.floor(i / 3) * 1000).toISOString(),
    completedAt: i % 2 === 0 ? new Date(Date.UTC(2026, 1, 3)).toISOString() : null,
    answers: [{ questionId: "q_walk", values: [String(i)] }]
  }))
}

layer(TestServer(walkFixture))("cursor walk", (it) => {
  it.effect("sees every response exactly once while new ones arrive mid-walk", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const api = yield* clientFor(TOKENS.editor)
      const seen: Array<string> = []
      let cursor: string | null = null
      let inserted = 0
      for (let pageNo = 0; pageNo < 100; pageNo++) {
        const page: typeof ResponsePage.Type = yield* api.responses.list({
          path: walk,
          urlParams: cursor === null ? { limit: 7 } : { limit: 7, cursor }
        })
        seen.push(...page.data.map((r) => r.id))
        if (pageNo % 5 === 0 && inserted < 30) {
          // A response started now sorts after everything that exists.
          for (let j = 0; j < 3; j++) {
            const id = `rsp_walk_new_${String(inserted).padStart(3, "0")}`
            yield* sql`INSERT INTO responses (id, survey_id, completed, created_at, updated_at)
                       VALUES (${id}, ${walkSurvey}, 0, ${"2026-03-01T00:00:00.000Z"}, ${"2026-03-01T00:00:00.000Z"})`
            inserted++
          }
        }
        cursor = page.nextCursor
        if (cursor === null) break
      }
      expect(cursor).toBeNull()
      expect(new Set(seen).size).toBe(seen.length)
      expect(seen.length).toBe(300 + inserted)
      expect(seen.slice(0, 300)).toEqual(Array.from({ length: 300 }, (_, i) => `rsp_walk_${String(i).padStart(3, "0")}`))
    }))

  it.effect("a filtered walk sees exactly the matching responses", () =>
    Effect.gen(function*() {
      const api = yield* clientFor(TOKENS.editor)
      const seen: Array<string> = []
      let cursor: string | null = null
      for (let pageNo = 0; pageNo < 100; pageNo++) {
        const page: typeof ResponsePage.Type = yield* api.responses.list({
          path: walk,
          urlParams: cursor === null ? { status: "completed", limit: 100 } : { status: "completed", limit: 100, cursor }
        })
        expect(page.data.every((r) => r.completed)).toBe(true)
        seen.push(...page.data.map((r) => r.id))
        cursor = page.nextCursor
        if (cursor === null) break
      }
      expect(seen).toEqual(
        Array.from({ length: 150 }, (_, i) => `rsp_walk_${String(i * 2).padStart(3, "0")}`)
      )
    }))
})
