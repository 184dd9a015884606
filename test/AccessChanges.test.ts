import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { ApiKeyRepo } from "../src/Auth/ApiKeyRepo.js"
import { elsewhere } from "./support/Elsewhere.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { SurveyId } from "../src/Domain/Ids.js"
import { clientFor, outcomeOf } from "./support/ApiClient.js"
import { TestServer } from "./support/TestServer.js"

/** How a typed call made with `token` ended: "ok" or its error's tag. */
const outcome = <A, E extends { readonly _tag: string }>(token: string, call: (api: Client) => Effect.Effect<A, E>) =>
  outcomeOf(Effect.flatMap(clientFor(token), call))
type Client = Effect.Effect.Success<ReturnType<typeof clientFor>>

const surveys = (api: Client) => api.surveys.list({ urlParams: {} })
const usage = (api: Client) => api.usage.get()
const survey = (id: string) => (api: Client) => api.surveys.get({ path: { id: SurveyId.make(id) } })

// Every check first makes a request that succeeds, so that the key's lookup is remembered,
// then changes what the lookup reads and expects the very next request to see the change.
layer(TestServer(baseFixture))("access decided at request time, with lookups remembered", (it) => {
  it.effect("a key revoked by the operator command is refused on the next request", () =>
    Effect.gen(function*() {
      expect(yield* outcome(TOKENS.limited, surveys)).toBe("ok")
      expect(yield* outcome(TOKENS.limited, surveys)).toBe("ok")
      const repo = yield* ApiKeyRepo
      expect(yield* repo.revoke(TOKENS.limited)).toBe(true)
      expect(yield* outcome(TOKENS.limited, surveys)).toBe("Unauthorized")
    }))

  it.effect("a key revoked from another connection is refused on the next request", () =>
    Effect.gen(function*() {
      expect(yield* outcome(TOKENS.other, usage)).toBe("ok")
      yield* elsewhere("UPDATE api_keys SET revoked = 1 WHERE workspace_id = 'ws_b'")
      expect(yield* outcome(TOKENS.other, usage)).toBe("Unauthorized")
      yield* elsewhere("UPDATE api_keys SET revoked = 0 WHERE workspace_id = 'ws_b'")
      expect(yield* outcome(TOKENS.other, usage)).toBe("ok")
    }))

  it.effect("membership, role, survey list and plans are read again after any change", () =>
    Effect.gen(function*() {
      expect(yield* outcome(TOKENS.viewer, survey("srv_main"))).toBe("ok")
      yield* elsewhere("DELETE FROM members WHERE workspace_id = 'ws_a' AND account_id = 'acc_viewer'")
      expect(yield* outcome(TOKENS.viewer, survey("srv_main"))).toBe("Unauthorized")
      yield* elsewhere("INSERT INTO members (workspace_id, account_id, role) VALUES ('ws_a', 'acc_viewer', 'viewer')")
      expect(yield* outcome(TOKENS.viewer, survey("srv_main"))).toBe("ok")

      // The owner's plan loses API access: every key of the workspace gets 403, then it comes back.
      expect(yield* outcome(TOKENS.editor, survey("srv_main"))).toBe("ok")
      yield* elsewhere("UPDATE plans SET api_access = 0 WHERE id = 'roomy'")
      expect(yield* outcome(TOKENS.editor, survey("srv_main"))).toBe("PlanUpgradeRequired")
      yield* elsewhere("UPDATE plans SET api_access = 1 WHERE id = 'roomy'")
      expect(yield* outcome(TOKENS.editor, survey("srv_main"))).toBe("ok")

      // The creator moves to another plan: the quota headers follow at once.
      const editor = yield* clientFor(TOKENS.editor)
      const [, before] = yield* editor.usage.get({ withResponse: true })
      yield* elsewhere("UPDATE accounts SET plan_id = 'business' WHERE id = 'acc_owner'")
      const [after, answer] = yield* editor.usage.get({ withResponse: true })
      expect(answer.headers["ratelimit-limit"]).not.toBe(before.headers["ratelimit-limit"])
      expect(after).toMatchObject({ dailyLimit: 100_000, burstLimit: 600 })

      // A key narrowed to one survey is refused the others on the next request.
      expect(yield* outcome(TOKENS.editor, survey("srv_draft"))).toBe("ok")
      yield* elsewhere(`UPDATE api_keys SET survey_ids = '["srv_main"]' WHERE workspace_id = 'ws_a' AND survey_ids IS NULL AND created_by = 'acc_owner'`)
      expect(yield* outcome(TOKENS.editor, survey("srv_draft"))).toBe("Forbidden")
      expect(yield* outcome(TOKENS.editor, survey("srv_main"))).toBe("ok")
    }))

  it.effect("a workspace handed to an owner without API access refuses its keys", () =>
    Effect.gen(function*() {
      expect(yield* outcome(TOKENS.viewer, survey("srv_main"))).toBe("ok")
      yield* elsewhere("UPDATE workspaces SET owner_account_id = 'acc_free' WHERE id = 'ws_a'")
      expect(yield* outcome(TOKENS.viewer, survey("srv_main"))).toBe("PlanUpgradeRequired")
      yield* elsewhere("UPDATE workspaces SET owner_account_id = 'acc_owner' WHERE id = 'ws_a'")
      expect(yield* outcome(TOKENS.viewer, survey("srv_main"))).toBe("ok")
    }))
})
