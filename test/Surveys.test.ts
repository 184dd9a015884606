import { expect, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { bodyOf, get, TestServer } from "./support/TestServer.js"

/** A page of a list, surveys or responses, as far as the tests read it. */
const PageBody = Schema.Struct({
  data: Schema.Array(Schema.Struct({ id: Schema.String })),
  nextCursor: Schema.NullOr(Schema.String)
})
const Issues = Schema.Struct({ issues: Schema.Array(Schema.Struct({ path: Schema.String })) })

layer(TestServer(baseFixture))("surveys", (it) => {
  it.effect("lists the workspace's surveys, newest activity first, without trashed ones", () =>
    Effect.gen(function*() {
      const res = yield* get("/api/v1/surveys", TOKENS.editor)
      expect(res.status).toBe(200)
      expect(res.headers["content-type"]).toContain("application/json")
      const body = bodyOf(PageBody, res)
      expect(body.data.map((s) => s.id)).toEqual(["srv_draft", "srv_main", "srv_closed"])
      expect(body.nextCursor).toBeNull()
    }))

  it.effect("a survey has every field of api-v1 §2.2, counts without sections or deleted questions", () =>
    Effect.gen(function*() {
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
      const draft = yield* get("/api/v1/surveys/srv_draft", TOKENS.editor)
      expect(draft.body).toMatchObject({ status: "draft", published: false, description: null, questionCount: 0 })
    }))

  it.effect("pages with limit and cursor, each survey once", () =>
    Effect.gen(function*() {
      const first = bodyOf(PageBody, yield* get("/api/v1/surveys?limit=2", TOKENS.editor))
      expect(first.data.map((s) => s.id)).toEqual(["srv_draft", "srv_main"])
      expect(first.nextCursor).toEqual(expect.any(String))
      const second = bodyOf(PageBody, yield* get(`/api/v1/surveys?limit=2&cursor=${first.nextCursor}`, TOKENS.editor))
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
      const responses = bodyOf(PageBody, yield* get("/api/v1/surveys/srv_main/responses?limit=1", TOKENS.editor))
      const res = yield* get(`/api/v1/surveys?cursor=${responses.nextCursor}`, TOKENS.editor)
      expect(res.status).toBe(400)
      const otherWorkspace = bodyOf(PageBody, yield* get("/api/v1/surveys?limit=1", TOKENS.editor))
      expect((yield* get(`/api/v1/surveys?cursor=${otherWorkspace.nextCursor}`, TOKENS.other)).status).toBe(400)
    }))

  it.effect("trashed, missing and foreign surveys answer 404", () =>
    Effect.gen(function*() {
      for (const id of ["srv_trashed", "srv_missing", "srv_other", "%20", "a".repeat(300)]) {
        const res = yield* get(`/api/v1/surveys/${id}`, TOKENS.editor)
        expect(res.status, id).toBe(404)
        expect(res.body).toMatchObject({ code: "not_found" })
      }
    }))
})
