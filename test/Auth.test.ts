import { expect, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { SurveyId } from "../src/Domain/Ids.js"
import { clientFor } from "./support/ApiClient.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { call, decodeAs, get, TestServer } from "./support/TestServer.js"

const survey = (id: string) => ({ path: { id: SurveyId.make(id) } })

const expectError = (res: { status: number; body: unknown }, status: number, code: string) => {
  expect(res.status).toBe(status)
  expect(res.body).toMatchObject({ code, message: expect.any(String) })
  expect(Object.keys(decodeAs(Schema.Object, res.body)).sort()).toEqual(
    code === "invalid_request" ? expect.arrayContaining(["code", "message"]) : ["code", "message"]
  )
}

layer(TestServer(baseFixture))("authentication and plans (decisions §3)", (it) => {
  it.effect("401 when the key is missing, malformed, unknown or revoked", () =>
    Effect.gen(function*() {
      expectError(yield* get("/api/v1/surveys"), 401, "unauthorized")
      expectError(yield* call("GET", "/api/v1/surveys", { headers: { authorization: "Basic abc" } }), 401, "unauthorized")
      expectError(
        yield* call("GET", "/api/v1/surveys", { headers: { authorization: "Bearer " } }),
        401,
        "unauthorized"
      )
      expectError(yield* get("/api/v1/surveys", "sk_live_doesnotexist0000000000000000"), 401, "unauthorized")
      expectError(yield* get("/api/v1/surveys", TOKENS.revoked), 401, "unauthorized")
    }))

  it.effect("401 when the key's creator is no longer a member of the workspace", () =>
    Effect.gen(function*() {
      expectError(yield* get("/api/v1/surveys", TOKENS.formerMember), 401, "unauthorized")
      expectError(yield* get("/api/v1/surveys/srv_main", TOKENS.formerMember), 401, "unauthorized")
    }))

  it.effect("403 plan_upgrade_required when the owner's plan lacks API access, on every endpoint", () =>
    Effect.gen(function*() {
      for (const path of ["/api/v1/surveys", "/api/v1/surveys/srv_x", "/api/v1/surveys/srv_x/questions"]) {
        expectError(yield* get(path, TOKENS.freePlan), 403, "plan_upgrade_required")
      }
    }))

  it.effect("a viewer's key reads", () =>
    Effect.gen(function*() {
      const viewer = yield* clientFor(TOKENS.viewer)
      expect((yield* viewer.surveys.list({ urlParams: {} })).data.length).toBeGreaterThan(0)
      expect((yield* viewer.responses.list({ ...survey("srv_main"), urlParams: {} })).data.length).toBeGreaterThan(0)
    }))

  it.effect("a survey-limited key lists only its surveys and gets 403 on other surveys of the workspace", () =>
    Effect.gen(function*() {
      const limited = yield* clientFor(TOKENS.limited)
      const list = yield* limited.surveys.list({ urlParams: {} })
      expect(list.data.map((s) => s.id)).toEqual(["srv_main"])
      expect((yield* limited.surveys.get(survey("srv_main"))).id).toBe("srv_main")
      expectError(yield* get("/api/v1/surveys/srv_draft", TOKENS.limited), 403, "forbidden")
      expectError(yield* get("/api/v1/surveys/srv_draft/questions", TOKENS.limited), 403, "forbidden")
      expectError(yield* get("/api/v1/surveys/srv_draft/responses", TOKENS.limited), 403, "forbidden")
      // Another workspace's or a trashed survey stays 404, even for a limited key.
      expectError(yield* get("/api/v1/surveys/srv_other", TOKENS.limited), 404, "not_found")
      expectError(yield* get("/api/v1/surveys/srv_trashed", TOKENS.limited), 404, "not_found")
    }))

  it.effect("a survey of another workspace answers 404, like a missing one", () =>
    Effect.gen(function*() {
      const other = yield* get("/api/v1/surveys/srv_other", TOKENS.editor)
      const missing = yield* get("/api/v1/surveys/srv_missing", TOKENS.editor)
      expectError(other, 404, "not_found")
      expectError(missing, 404, "not_found")
      const otherWorkspace = yield* clientFor(TOKENS.other)
      expect((yield* otherWorkspace.surveys.get(survey("srv_other"))).id).toBe("srv_other")
    }))

  it.effect("every answer carries x-request-id, errors included; a sane incoming one is echoed", () =>
    Effect.gen(function*() {
      expect((yield* get("/api/v1/surveys")).headers["x-request-id"]).toMatch(/^req_[A-Za-z0-9]{16}$/)
      expect((yield* get("/nowhere")).headers["x-request-id"]).toMatch(/^req_/)
      const echoed = yield* call("GET", "/api/v1/surveys", {
        token: TOKENS.editor,
        headers: { "x-request-id": "client-trace-12345" }
      })
      expect(echoed.headers["x-request-id"]).toBe("client-trace-12345")
    }))

  it.effect("unknown routes answer the documented 404 body", () =>
    Effect.gen(function*() {
      expectError(yield* get("/api/v1/nothing-here", TOKENS.editor), 404, "not_found")
    }))
})
