import { expect, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { KeyInfo } from "../src/Auth/KeyApi.js"
import { elsewhere } from "./support/Elsewhere.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { clientFor, outcomeOf } from "./support/ApiClient.js"
import { bodyOf, get, TestServer } from "./support/TestServer.js"

const keyOf = (token?: string) => Effect.flatMap(clientFor(token), (api) => api.key.get())

const Info = Schema.encodedSchema(KeyInfo)

layer(TestServer(baseFixture))("GET /api/v1/key (v1-extensions §X8)", (it) => {
  it.effect("answers the key's workspace, role and survey limits, and nothing else", () =>
    Effect.gen(function*() {
      const editor = yield* get("/api/v1/key", TOKENS.editor)
      expect(editor.status).toBe(200)
      expect(editor.body).toStrictEqual({ workspaceId: "ws_a", role: "owner", surveyIds: null })
      // The answer is what the contract declares, no field more.
      expect(bodyOf(Info, editor)).toStrictEqual(editor.body)

      expect((yield* get("/api/v1/key", TOKENS.viewer)).body).toStrictEqual({ workspaceId: "ws_a", role: "viewer", surveyIds: null })
      expect((yield* get("/api/v1/key", TOKENS.limited)).body).toStrictEqual({
        workspaceId: "ws_a",
        role: "owner",
        surveyIds: ["srv_main"]
      })
      expect((yield* get("/api/v1/key", TOKENS.other)).body).toStrictEqual({ workspaceId: "ws_b", role: "owner", surveyIds: null })

      // Neither the token, its hash nor the creator's account appears in the answer.
      const text = JSON.stringify(editor.body)
      expect(text).not.toContain(TOKENS.editor)
      expect(text).not.toContain("acc_owner")
    }))

  it.effect("is counted against the quota like every request", () =>
    Effect.gen(function*() {
      const first = yield* get("/api/v1/key", TOKENS.other)
      const second = yield* get("/api/v1/key", TOKENS.other)
      expect(Number(second.headers["ratelimit-remaining"])).toBe(Number(first.headers["ratelimit-remaining"]) - 1)
    }))

  it.effect("answers 401 and 403 as every endpoint does", () =>
    Effect.gen(function*() {
      expect(yield* outcomeOf(keyOf())).toBe("Unauthorized")
      expect(yield* outcomeOf(keyOf(TOKENS.revoked))).toBe("Unauthorized")
      expect(yield* outcomeOf(keyOf(TOKENS.formerMember))).toBe("Unauthorized")
      expect(yield* outcomeOf(keyOf(TOKENS.freePlan))).toBe("PlanUpgradeRequired")
    }))

  it.effect("a member whose role changed answers the new role at once", () =>
    Effect.gen(function*() {
      expect(yield* keyOf(TOKENS.viewer)).toMatchObject({ role: "viewer" })
      yield* elsewhere("UPDATE members SET role = 'editor' WHERE workspace_id = 'ws_a' AND account_id = 'acc_viewer'")
      expect(yield* keyOf(TOKENS.viewer)).toMatchObject({ role: "editor" })
      yield* elsewhere("UPDATE members SET role = 'viewer' WHERE workspace_id = 'ws_a' AND account_id = 'acc_viewer'")
      expect(yield* keyOf(TOKENS.viewer)).toMatchObject({ role: "viewer" })
    }))
})
