import { HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Api } from "../src/Api.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { TestServer } from "./support/TestServer.js"

const client = (token: string) =>
  HttpApiClient.make(Api, { transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(token)) })

layer(TestServer(baseFixture))("typed client derived from the API declaration", (it) => {
  it.effect("decodes successes into the domain classes", () =>
    Effect.gen(function*() {
      const api = yield* client(TOKENS.editor)
      const page = yield* api.surveys.list({ urlParams: { limit: 2 } })
      expect(page.data.map((s) => s.id)).toEqual(["srv_draft", "srv_main"])
      const next = yield* api.surveys.list({ urlParams: { limit: 2, cursor: page.nextCursor ?? "" } })
      expect(next.data.map((s) => s.id)).toEqual(["srv_closed"])
      const questions = yield* api.questions.list({ path: { id: "srv_main" } })
      expect(questions.data.map((q) => q.type)).toEqual(["textarea", "checkbox", "sort", "number"])
      const responses = yield* api.responses.list({ path: { id: "srv_main" }, urlParams: { status: "completed" } })
      expect(responses.data.map((r) => r.id)).toEqual(["rsp_1", "rsp_3"])
    }))

  it.effect("decodes documented errors into their tagged classes", () =>
    Effect.gen(function*() {
      const api = yield* client(TOKENS.limited)
      const missing = yield* Effect.flip(api.surveys.get({ path: { id: "srv_missing" } }))
      expect(missing._tag).toBe("NotFound")
      const forbidden = yield* Effect.flip(api.surveys.get({ path: { id: "srv_draft" } }))
      expect(forbidden._tag).toBe("Forbidden")
      const free = yield* client(TOKENS.freePlan)
      const plan = yield* Effect.flip(free.surveys.list({ urlParams: {} }))
      expect(plan._tag).toBe("PlanUpgradeRequired")
      const anonymous = yield* client("sk_live_unknownunknownunknownunknown")
      const unauthorized = yield* Effect.flip(anonymous.surveys.list({ urlParams: {} }))
      expect(unauthorized._tag).toBe("Unauthorized")
    }))
})
