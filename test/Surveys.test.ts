import { expect, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { SurveyId } from "../src/Domain/Ids.js"
import { clientFor } from "./support/ApiClient.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { bodyOf, get, TestServer } from "./support/TestServer.js"

const Issues = Schema.Struct({ issues: Schema.Array(Schema.Struct({ path: Schema.String })) })

const survey = (id: string) => ({ path: { id: SurveyId.make(id) } })

layer(TestServer(baseFixture))("surveys", (it) => {
  it.effect("lists the workspace's surveys, newest activity first, without trashed ones", () =>
    Effect.gen(function*() {
      const api = yield* clientFor(TOKENS.editor)
      const [page, response] = yield* api.surveys.list({ urlParams: {}, withResponse: true })
      expect(response.headers["content-type"]).toContain("application/json")
      expect(page.data.map((s) => s.id)).toEqual(["srv_draft", "srv_main", "srv_closed"])
      expect(page.nextCursor).toBeNull()
    }))

  it.effect("a survey has every field of api-v1 §2.2, counts without sections or deleted questions", () =>
    Effect.gen(function*() {
      // Raw: the exact wire form, no field more; the typed client would drop one it does not know.
      const res = yield* get("/api/v1/surveys/srv_main", TOKENS.editor)
      expect(res.status).toBe(200)
      expect(res.body).toEqual({
        id: "srv_main",
        title: "Main",
        description: "The main survey",
        status: "published",
        published: true,
        questionCount: 4,
        responseCount: 3,
        createdAt: "2026-01-01T00:00:00.000Z",
        updatedAt: "2026-01-05T00:00:00.000Z"
      })
      const api = yield* clientFor(TOKENS.editor)
      const draft = yield* api.surveys.get(survey("srv_draft"))
      expect(draft).toMatchObject({ status: "draft", published: false, description: null, questionCount: 0 })
    }))

  it.effect("pages with limit and cursor, each survey once", () =>
    Effect.gen(function*() {
      const api = yield* clientFor(TOKENS.editor)
      const first = yield* api.surveys.list({ urlParams: { limit: 2 } })
      expect(first.data.map((s) => s.id)).toEqual(["srv_draft", "srv_main"])
      expect(first.nextCursor).toEqual(expect.any(String))
      const second = yield* api.surveys.list({ urlParams: { limit: 2, cursor: first.nextCursor ?? "" } })
      expect(second.data.map((s) => s.id)).toEqual(["srv_closed"])
      expect(second.nextCursor).toBeNull()
    }))

  it.effect("rejects a malformed limit or cursor with 400 invalid_request and issues", () =>
    Effect.gen(function*() {
      for (const query of ["limit=0", "limit=101", "limit=2.5", "limit=abc", "limit=", "cursor=%%%", "cursor=bm9wZQ"]) {
        const res = yield* get(`/api/v1/surveys?${query}`, TOKENS.editor)
        expect(res.status, query).toBe(400)
        expect(res.body).toMatchObject({ code: "invalid_request", message: expect.any(String) })
        expect(bodyOf(Issues, res).issues[0]?.path).toMatch(/limit|cursor/)
        expect(res.text).not.toContain("_tag")
      }
    }))

  it.effect("a cursor issued for another list is refused", () =>
    Effect.gen(function*() {
      const api = yield* clientFor(TOKENS.editor)
      const responses = yield* api.responses.list({ ...survey("srv_main"), urlParams: { limit: 1 } })
      expect(responses.nextCursor).not.toBeNull()
      const refused = yield* Effect.flip(api.surveys.list({ urlParams: { cursor: responses.nextCursor ?? "" } }))
      expect(refused._tag).toBe("InvalidRequest")
      const otherWorkspace = yield* api.surveys.list({ urlParams: { limit: 1 } })
      expect(otherWorkspace.nextCursor).not.toBeNull()
      const other = yield* clientFor(TOKENS.other)
      const foreign = yield* Effect.flip(other.surveys.list({ urlParams: { cursor: otherWorkspace.nextCursor ?? "" } }))
      expect(foreign._tag).toBe("InvalidRequest")
    }))

  it.effect("trashed, missing and foreign surveys answer 404", () =>
    Effect.gen(function*() {
      const api = yield* clientFor(TOKENS.editor)
      for (const id of ["srv_trashed", "srv_missing", "srv_other"]) {
        const error = yield* Effect.flip(api.surveys.get(survey(id)))
        expect(error._tag, id).toBe("NotFound")
      }
      // Raw: ids no client would send, a blank and one as long as an id may be (a longer one is refused: 400).
      for (const id of ["%20", "a".repeat(128)]) {
        const res = yield* get(`/api/v1/surveys/${id}`, TOKENS.editor)
        expect(res.status, id).toBe(404)
        expect(res.body).toMatchObject({ code: "not_found" })
      }
    }))
})
