import { HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Api } from "../src/Api.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { TestServer } from "./support/TestServer.js"
import { ResponseId, SurveyId } from "../src/Domain/Ids.js"

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
      const questions = yield* api.questions.list({ path: { id: SurveyId.make("srv_main") } })
      expect(questions.data.map((q) => q.type)).toEqual(["textarea", "checkbox", "sort", "number"])
      const responses = yield* api.responses.list({ path: { id: SurveyId.make("srv_main") }, urlParams: { status: "completed" } })
      expect(responses.data.map((r) => r.id)).toEqual(["rsp_1", "rsp_3"])
    }))

  it.effect("decodes documented errors into their tagged classes", () =>
    Effect.gen(function*() {
      const api = yield* client(TOKENS.limited)
      const missing = yield* Effect.flip(api.surveys.get({ path: { id: SurveyId.make("srv_missing") } }))
      expect(missing._tag).toBe("NotFound")
      const forbidden = yield* Effect.flip(api.surveys.get({ path: { id: SurveyId.make("srv_draft") } }))
      expect(forbidden._tag).toBe("Forbidden")
      const free = yield* client(TOKENS.freePlan)
      const plan = yield* Effect.flip(free.surveys.list({ urlParams: {} }))
      expect(plan._tag).toBe("PlanUpgradeRequired")
      const anonymous = yield* client("sk_live_unknownunknownunknownunknown")
      const unauthorized = yield* Effect.flip(anonymous.surveys.list({ urlParams: {} }))
      expect(unauthorized._tag).toBe("Unauthorized")
    }))
})

layer(TestServer(baseFixture))("typed client: sync and data rights", (it) => {
  it.effect("syncs by change, deletes a response and erases a person", () =>
    Effect.gen(function*() {
      const api = yield* client(TOKENS.editor)
      const changed = yield* api.responses.list({
        path: { id: SurveyId.make("srv_main") },
        urlParams: { updatedAfter: "2026-01-11T00:00:00Z" }
      })
      expect(changed.data.map((r) => [r.id, r.updatedAt])).toEqual([
        ["rsp_2", "2026-01-11T00:00:00.000Z"],
        ["rsp_3", "2026-01-12T00:01:00.000Z"]
      ])
      yield* api.responses.delete({ path: { id: SurveyId.make("srv_main"), responseId: ResponseId.make("rsp_2") } })
      const gone = yield* Effect.flip(api.responses.get({ path: { id: SurveyId.make("srv_main"), responseId: ResponseId.make("rsp_2") } }))
      expect(gone._tag).toBe("NotFound")
      const erased = yield* api.erasures.create({ payload: { externalUserId: "user-1" } })
      expect(erased).toEqual({ externalUserId: "user-1", deletedResponses: 1 })
      const limited = yield* client(TOKENS.limited)
      const refused = yield* Effect.flip(limited.erasures.create({ payload: { externalUserId: "user-1" } }))
      expect(refused._tag).toBe("Forbidden")
      const session = yield* api.embedSessions.create({
        path: { id: SurveyId.make("srv_main") },
        payload: { externalUserId: "user-9" },
        headers: { "idempotency-key": "client-retry-1" }
      })
      const replayed = yield* api.embedSessions.create({
        path: { id: SurveyId.make("srv_main") },
        payload: { externalUserId: "user-9" },
        headers: { "idempotency-key": "client-retry-1" }
      })
      expect(replayed).toEqual(session)
    }))
})
