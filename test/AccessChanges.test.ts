import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { ApiKeyRepo } from "../src/Auth/ApiKeyRepo.js"
import { elsewhere } from "./support/Elsewhere.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { get, TestServer } from "./support/TestServer.js"

const statusOf = (path: string, token: string) => Effect.map(get(path, token), (res) => res.status)

// Every check first makes a request that succeeds, so that the key's lookup is remembered,
// then changes what the lookup reads and expects the very next request to see the change.
layer(TestServer(baseFixture))("access decided at request time, with lookups remembered", (it) => {
  it.effect("a key revoked by the operator command is refused on the next request", () =>
    Effect.gen(function*() {
      expect(yield* statusOf("/api/v1/surveys", TOKENS.limited)).toBe(200)
      expect(yield* statusOf("/api/v1/surveys", TOKENS.limited)).toBe(200)
      const repo = yield* ApiKeyRepo
      expect(yield* repo.revoke(TOKENS.limited)).toBe(true)
      const res = yield* get("/api/v1/surveys", TOKENS.limited)
      expect(res.status).toBe(401)
      expect(res.body).toMatchObject({ code: "unauthorized" })
    }))

  it.effect("a key revoked from another connection is refused on the next request", () =>
    Effect.gen(function*() {
      expect(yield* statusOf("/api/v1/usage", TOKENS.other)).toBe(200)
      yield* elsewhere("UPDATE api_keys SET revoked = 1 WHERE workspace_id = 'ws_b'")
      expect(yield* statusOf("/api/v1/usage", TOKENS.other)).toBe(401)
      yield* elsewhere("UPDATE api_keys SET revoked = 0 WHERE workspace_id = 'ws_b'")
      expect(yield* statusOf("/api/v1/usage", TOKENS.other)).toBe(200)
    }))

  it.effect("membership, role, survey list and plans are read again after any change", () =>
    Effect.gen(function*() {
      expect(yield* statusOf("/api/v1/surveys/srv_main", TOKENS.viewer)).toBe(200)
      yield* elsewhere("DELETE FROM members WHERE workspace_id = 'ws_a' AND account_id = 'acc_viewer'")
      expect(yield* statusOf("/api/v1/surveys/srv_main", TOKENS.viewer)).toBe(401)
      yield* elsewhere("INSERT INTO members (workspace_id, account_id, role) VALUES ('ws_a', 'acc_viewer', 'viewer')")
      expect(yield* statusOf("/api/v1/surveys/srv_main", TOKENS.viewer)).toBe(200)

      // The owner's plan loses API access: every key of the workspace gets 403, then it comes back.
      expect(yield* statusOf("/api/v1/surveys/srv_main", TOKENS.editor)).toBe(200)
      yield* elsewhere("UPDATE plans SET api_access = 0 WHERE id = 'roomy'")
      const refused = yield* get("/api/v1/surveys/srv_main", TOKENS.editor)
      expect(refused.status).toBe(403)
      expect(refused.body).toMatchObject({ code: "plan_upgrade_required" })
      yield* elsewhere("UPDATE plans SET api_access = 1 WHERE id = 'roomy'")
      expect(yield* statusOf("/api/v1/surveys/srv_main", TOKENS.editor)).toBe(200)

      // The creator moves to another plan: the quota headers follow at once.
      const before = yield* get("/api/v1/usage", TOKENS.editor)
      yield* elsewhere("UPDATE accounts SET plan_id = 'business' WHERE id = 'acc_owner'")
      const after = yield* get("/api/v1/usage", TOKENS.editor)
      expect(after.headers["ratelimit-limit"]).not.toBe(before.headers["ratelimit-limit"])
      expect(after.body).toMatchObject({ dailyLimit: 100_000, burstLimit: 600 })

      // A key narrowed to one survey is refused the others on the next request.
      expect(yield* statusOf("/api/v1/surveys/srv_draft", TOKENS.editor)).toBe(200)
      yield* elsewhere(`UPDATE api_keys SET survey_ids = '["srv_main"]' WHERE workspace_id = 'ws_a' AND survey_ids IS NULL AND created_by = 'acc_owner'`)
      expect(yield* statusOf("/api/v1/surveys/srv_draft", TOKENS.editor)).toBe(403)
      expect(yield* statusOf("/api/v1/surveys/srv_main", TOKENS.editor)).toBe(200)
    }))

  it.effect("a workspace handed to an owner without API access refuses its keys", () =>
    Effect.gen(function*() {
      expect(yield* statusOf("/api/v1/surveys/srv_main", TOKENS.viewer)).toBe(200)
      yield* elsewhere("UPDATE workspaces SET owner_account_id = 'acc_free' WHERE id = 'ws_a'")
      expect(yield* statusOf("/api/v1/surveys/srv_main", TOKENS.viewer)).toBe(403)
      yield* elsewhere("UPDATE workspaces SET owner_account_id = 'acc_owner' WHERE id = 'ws_a'")
      expect(yield* statusOf("/api/v1/surveys/srv_main", TOKENS.viewer)).toBe(200)
    }))
})
