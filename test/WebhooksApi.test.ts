import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { Webhook } from "standardwebhooks"
import { EventEnvelope } from "../src/Domain/Event.js"
import { SurveyId } from "../src/Domain/Ids.js"
import { DeliveryLog } from "../src/Webhooks/Api.js"
import { Resolver } from "../src/Webhooks/UrlPolicy.js"
import { clientFor } from "./support/ApiClient.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { bodyOf, call, decodeAs, ErrorCode, get, TestServer } from "./support/TestServer.js"
import { receiver } from "./support/WebhookReceiver.js"

const put = (path: string, token: string, body: unknown) =>
  call("PUT", path, { token, body: typeof body === "string" ? body : JSON.stringify(body) })

const InvalidBody = Schema.Struct({
  code: Schema.Literal("invalid_request"),
  message: Schema.String,
  issues: Schema.Array(Schema.Struct({ path: Schema.String, message: Schema.String }))
})

const NONE = {
  enabled: false, targetUrl: null, events: [], disabledReason: null, previousSecretExpiresAt: null, maxAttemptsPerSecond: null
}
const V1_SET = ["response.completed", "survey.published", "survey.closed"]

const survey = (id: string) => ({ path: { id: SurveyId.make(id) } })

/** Fails the test unless `call` fails with the documented error of this tag. */
const refusedAs = <A, E extends { readonly _tag: string }, R>(tag: string, call: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.flip(call), (error) => expect(error._tag).toBe(tag))

// A public-looking name that the test resolver maps to a public address; nothing is sent to it here.
const publicResolver = Layer.succeed(Resolver, {
  resolve: (host: string) =>
    host === "hooks.example.com"
      ? Effect.succeed([{ address: "93.184.216.34", family: 4 as const }])
      : host === "inside.example.com"
      ? Effect.succeed([{ address: "93.184.216.34", family: 4 as const }, { address: "10.1.2.3", family: 4 as const }])
      : Effect.fail(`could not resolve ${host}`)
})

layer(TestServer(baseFixture, { webhookAllowPrivateTargets: false }).pipe(Layer.provide(publicResolver)))(
  "webhook settings",
  (it) => {
    it.effect("GET answers disabled before any PUT, for the survey and the workspace", () =>
      Effect.gen(function*() {
        const viewer = yield* clientFor(TOKENS.viewer)
        expect(yield* viewer.surveyWebhook.get(survey("srv_closed"))).toEqual(NONE)
        const other = yield* clientFor(TOKENS.other)
        expect(yield* other.workspaceWebhooks.get({})).toEqual(NONE)
      }))

    it.effect("PUT registers, returns a new secret once, and GET never shows it", () =>
      Effect.gen(function*() {
        const api = yield* clientFor(TOKENS.editor)
        const body = yield* api.surveyWebhook.put({
          ...survey("srv_main"),
          payload: { targetUrl: "https://hooks.example.com/survey" }
        })
        expect(body.enabled).toBe(true)
        expect(body.targetUrl).toBe("https://hooks.example.com/survey")
        expect(body.signingSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
        const rotated = yield* api.surveyWebhook.put({
          ...survey("srv_main"),
          payload: { targetUrl: "https://hooks.example.com/survey2" }
        })
        expect(rotated.signingSecret).not.toBe(body.signingSecret)
        // Raw: the check is on the bytes, no secret anywhere in the answer, which the typed client would not show.
        const read = yield* get("/api/v1/surveys/srv_main/webhook", TOKENS.viewer)
        expect(read.body).toEqual({
          enabled: true,
          targetUrl: "https://hooks.example.com/survey2",
          events: V1_SET,
          disabledReason: null,
          previousSecretExpiresAt: null,
          maxAttemptsPerSecond: null
        })
        expect(read.text).not.toContain("whsec_")
        // The workspace webhook is separate and unaffected.
        expect(yield* api.workspaceWebhooks.get({})).toEqual(NONE)
      }))

    it.effect("workspace PUT, GET and DELETE", () =>
      Effect.gen(function*() {
        const api = yield* clientFor(TOKENS.other)
        const registered = yield* api.workspaceWebhooks.put({ payload: { targetUrl: "https://hooks.example.com/ws" } })
        expect(registered.signingSecret).toMatch(/^whsec_/)
        expect(yield* api.workspaceWebhooks.get({})).toEqual({
          enabled: true,
          targetUrl: "https://hooks.example.com/ws",
          events: V1_SET,
          disabledReason: null,
          previousSecretExpiresAt: null,
          maxAttemptsPerSecond: null
        })
        // Raw: the answer must be empty to the byte, which the typed client reads as no value either way.
        const removed = yield* call("DELETE", "/api/v1/webhooks", { token: TOKENS.other })
        expect(removed.status).toBe(204)
        expect(removed.text).toBe("")
        expect(yield* api.workspaceWebhooks.get({})).toEqual(NONE)
        // Deleting twice is harmless.
        yield* api.workspaceWebhooks.delete({})
      }))

    it.effect("refuses non-public, credential-bearing and malformed URLs with 400 and changes nothing", () =>
      Effect.gen(function*() {
        const bad = [
          "http://hooks.example.com/",
          "https://127.0.0.1/",
          "https://2130706433/",
          "https://0x7f.1/",
          "https://[::1]/",
          "https://[::ffff:10.0.0.1]/",
          "https://169.254.169.254/latest",
          "https://192.168.1.1/",
          "https://localhost/",
          "https://user:secret@hooks.example.com/",
          "https://inside.example.com/",
          "https://no-such-host.example/",
          "not a url",
          ""
        ]
        const api = yield* clientFor(TOKENS.editor)
        for (const targetUrl of bad) {
          const error = yield* Effect.flip(api.workspaceWebhooks.put({ payload: { targetUrl } }))
          expect(error._tag, targetUrl).toBe("InvalidRequest")
          expect(error.message).not.toContain("secret")
        }
        for (const raw of ["", "{", "[]", "{\"targetUrl\": 5}", "{}", "null"]) {
          const res = yield* put("/api/v1/surveys/srv_draft/webhook", TOKENS.editor, raw)
          expect(res.status, raw).toBe(400)
          expect(bodyOf(ErrorCode, res).code).toBe("invalid_request")
        }
        expect(yield* api.workspaceWebhooks.get({})).toEqual(NONE)
        expect(yield* api.surveyWebhook.get(survey("srv_draft"))).toEqual(NONE)
      }))

    it.effect("PUT takes an event filter, answers it, and GET shows it; the v1 set when omitted", () =>
      Effect.gen(function*() {
        const api = yield* clientFor(TOKENS.editor)
        const viewer = yield* clientFor(TOKENS.viewer)
        const chosen = ["response.updated", "response.created", "survey.closed"] as const
        const registered = yield* api.surveyWebhook.put({
          ...survey("srv_closed"),
          payload: { targetUrl: "https://hooks.example.com/filtered", events: chosen }
        })
        expect(registered).toMatchObject({ events: chosen, disabledReason: null, enabled: true })
        // Catalogue order, whatever order the PUT gave.
        expect(yield* viewer.surveyWebhook.get(survey("srv_closed"))).toEqual({
          enabled: true,
          targetUrl: "https://hooks.example.com/filtered",
          events: ["survey.closed", "response.created", "response.updated"],
          disabledReason: null,
          previousSecretExpiresAt: null,
          maxAttemptsPerSecond: null
        })
        // A later PUT without `events` goes back to the v1 set.
        const again = yield* api.surveyWebhook.put({
          ...survey("srv_closed"),
          payload: { targetUrl: "https://hooks.example.com/filtered" }
        })
        expect(again.events).toEqual(V1_SET)
        expect((yield* viewer.surveyWebhook.get(survey("srv_closed"))).events).toEqual(V1_SET)
      }))

    it.effect("refuses unknown, repeated and empty event lists with 400 naming the issue and changes nothing", () =>
      Effect.gen(function*() {
        const target = "https://hooks.example.com/events"
        const api = yield* clientFor(TOKENS.other)
        yield* api.workspaceWebhooks.put({ payload: { targetUrl: target, events: ["survey.published"] } })
        // Raw: lists the payload schema refuses, so the typed client would not send them.
        const cases: ReadonlyArray<readonly [unknown, string]> = [
          [[], "events"],
          [["response.completed", "nope"], "events.1"],
          [["webhook.test"], "events.0"],
          [["survey.closed", "response.created", "survey.closed"], "events.2"],
          ["response.completed", "events"],
          [[5], "events.0"],
          [null, "events"]
        ]
        for (const [events, path] of cases) {
          for (const scope of ["/api/v1/webhooks", "/api/v1/surveys/srv_other/webhook"]) {
            const res = yield* put(scope, TOKENS.other, { targetUrl: target, events })
            expect(res.status, JSON.stringify(events)).toBe(400)
            const body = bodyOf(InvalidBody, res)
            expect(body.issues.map((i) => i.path), JSON.stringify(events)).toContain(path)
          }
        }
        expect(yield* api.workspaceWebhooks.get({})).toEqual({
          enabled: true,
          targetUrl: target,
          events: ["survey.published"],
          disabledReason: null,
          previousSecretExpiresAt: null,
          maxAttemptsPerSecond: null
        })
        expect(yield* api.surveyWebhook.get(survey("srv_other"))).toEqual(NONE)
        yield* api.workspaceWebhooks.delete({})
      }))

    it.effect("applies the role and scope rules", () =>
      Effect.gen(function*() {
        const payload = { targetUrl: "https://hooks.example.com/x" }
        const viewer = yield* clientFor(TOKENS.viewer)
        yield* refusedAs("Forbidden", viewer.workspaceWebhooks.put({ payload }))
        yield* refusedAs("Forbidden", viewer.surveyWebhook.put({ ...survey("srv_main"), payload }))
        yield* refusedAs("Forbidden", viewer.workspaceWebhooks.delete({}))
        yield* refusedAs("Forbidden", viewer.workspaceWebhooks.test({}))
        // A survey-limited key cannot use any workspace webhook endpoint.
        const limited = yield* clientFor(TOKENS.limited)
        yield* refusedAs("Forbidden", limited.workspaceWebhooks.get({}))
        yield* refusedAs("Forbidden", limited.workspaceWebhooks.put({ payload }))
        yield* refusedAs("Forbidden", limited.workspaceWebhooks.delete({}))
        yield* refusedAs("Forbidden", limited.workspaceWebhooks.test({}))
        yield* refusedAs("Forbidden", limited.workspaceWebhooks.deliveries({ urlParams: {} }))
        // ...but may manage the webhook of a survey in its list, and not of another.
        expect((yield* limited.surveyWebhook.put({ ...survey("srv_main"), payload })).enabled).toBe(true)
        yield* refusedAs("Forbidden", limited.surveyWebhook.get(survey("srv_draft")))
        // Another workspace's, trashed and missing surveys are 404.
        const editor = yield* clientFor(TOKENS.editor)
        for (const id of ["srv_other", "srv_trashed", "srv_nope"]) {
          yield* refusedAs("NotFound", editor.surveyWebhook.get(survey(id)))
          yield* refusedAs("NotFound", editor.surveyWebhook.deliveries({ ...survey(id), urlParams: {} }))
          yield* refusedAs("NotFound", editor.surveyWebhook.put({ ...survey(id), payload }))
        }
        const free = yield* clientFor(TOKENS.freePlan)
        yield* refusedAs("PlanUpgradeRequired", free.workspaceWebhooks.get({}))
        const anonymous = yield* clientFor()
        yield* refusedAs("Unauthorized", anonymous.workspaceWebhooks.get({}))
      }))

    it.effect("delivery logs validate limit and answer an empty list at first", () =>
      Effect.gen(function*() {
        const other = yield* clientFor(TOKENS.other)
        expect(yield* other.workspaceWebhooks.deliveries({ urlParams: {} })).toEqual({ data: [] })
        for (const limit of ["0", "101", "abc", "1.5"]) {
          const res = yield* get(`/api/v1/webhooks/deliveries?limit=${limit}`, TOKENS.editor)
          expect(res.status, limit).toBe(400)
          expect(bodyOf(ErrorCode, res).code).toBe("invalid_request")
          const surveyLog = yield* get(`/api/v1/surveys/srv_main/webhook/deliveries?limit=${limit}`, TOKENS.editor)
          expect(surveyLog.status, limit).toBe(400)
        }
      }))

    it.effect("POST /surveys/{id}/webhook/test: 400 without a webhook, 403 for viewers and other surveys' keys, 404", () =>
      Effect.gen(function*() {
        const test = (id: string, token: string) =>
          Effect.flatMap(clientFor(token), (api) => api.surveyWebhook.test(survey(id)))
        yield* refusedAs("InvalidRequest", test("srv_draft", TOKENS.editor))
        yield* refusedAs("Forbidden", test("srv_main", TOKENS.viewer))
        yield* refusedAs("Forbidden", test("srv_draft", TOKENS.limited))
        for (const id of ["srv_other", "srv_trashed", "srv_nope"]) {
          yield* refusedAs("NotFound", test(id, TOKENS.editor))
        }
      }))

    it.effect("POST /webhooks/test without a workspace webhook answers 400", () =>
      Effect.gen(function*() {
        const other = yield* clientFor(TOKENS.other)
        yield* refusedAs("InvalidRequest", other.workspaceWebhooks.test({}))
      }))
  }
)

// Live clock: standardwebhooks refuses timestamps far from the present.
layer(TestServer(baseFixture), { excludeTestServices: true })("POST /webhooks/test", (it) => {
  it.effect("sends one signed webhook.test event that standardwebhooks verifies, and logs it", () =>
    Effect.gen(function*() {
      const target = yield* receiver()
      const api = yield* clientFor(TOKENS.editor)
      const { signingSecret: secret } = yield* api.workspaceWebhooks.put({ payload: { targetUrl: target.url } })
      expect(yield* api.workspaceWebhooks.test({})).toEqual({ delivered: true })
      const [delivery] = yield* target.received
      expect(delivery).toBeDefined()
      if (delivery === undefined) return yield* Effect.dieMessage("no delivery received")
      const verified = decodeAs(EventEnvelope, new Webhook(secret).verify(delivery.body, delivery.headers))
      expect(verified["type"]).toBe("webhook.test")
      expect(verified["formId"]).toBeNull()
      expect(verified["data"]).toEqual({})
      expect(delivery.headers["x-service-event-id"]).toBe(verified["id"])
      expect(delivery.headers["webhook-id"]).toBe(verified["id"])
      expect(delivery.headers["content-type"]).toBe("application/json")
      expect(delivery.headers["user-agent"]).toBe("survey-service-webhooks/1")
      // Raw: the log must not carry the payload, a field the typed client would drop unseen.
      const log = bodyOf(DeliveryLog, yield* get("/api/v1/webhooks/deliveries", TOKENS.editor))
      expect(log.data).toHaveLength(1)
      expect(log.data[0]).toMatchObject({
        eventId: verified["id"],
        eventType: "webhook.test",
        surveyId: null,
        ok: true,
        responseStatus: 200,
        error: null
      })
      expect(log.data[0]?.id).toMatch(/^dlv_/)
      expect(JSON.stringify(log)).not.toContain("\"data\":{}")
    }).pipe(Effect.scoped))

  it.effect("POST /surveys/{id}/webhook/test sends webhook.test with the survey as formId to the survey webhook", () =>
    Effect.gen(function*() {
      const target = yield* receiver()
      const api = yield* clientFor(TOKENS.editor)
      const { signingSecret: secret } = yield* api.surveyWebhook.put({
        ...survey("srv_closed"),
        payload: { targetUrl: target.url, events: ["response.deleted"] }
      })
      expect(yield* api.surveyWebhook.test(survey("srv_closed"))).toEqual({ delivered: true })
      const [delivery] = yield* target.received
      if (delivery === undefined) return yield* Effect.dieMessage("nothing received")
      const verified = decodeAs(EventEnvelope, new Webhook(secret).verify(delivery.body, delivery.headers))
      expect(verified).toMatchObject({ type: "webhook.test", formId: "srv_closed", data: {} })
      const log = yield* api.surveyWebhook.deliveries({ ...survey("srv_closed"), urlParams: {} })
      expect(log.data).toHaveLength(1)
      expect(log.data[0]).toMatchObject({ eventId: verified.id, eventType: "webhook.test", surveyId: "srv_closed", ok: true })
      // Not in the workspace webhook's log.
      const workspaceLog = yield* api.workspaceWebhooks.deliveries({ urlParams: {} })
      expect(workspaceLog.data.map((a) => a.eventId)).not.toContain(verified.id)
    }).pipe(Effect.scoped))

  it.effect("answers delivered false, and logs the status, when the endpoint refuses", () =>
    Effect.gen(function*() {
      const target = yield* receiver(() => new Response("nope", { status: 503 }))
      const api = yield* clientFor(TOKENS.editor)
      yield* api.workspaceWebhooks.put({ payload: { targetUrl: target.url } })
      expect(yield* api.workspaceWebhooks.test({})).toEqual({ delivered: false })
      const log = yield* api.workspaceWebhooks.deliveries({ urlParams: { limit: 1 } })
      expect(log.data).toHaveLength(1)
      expect(log.data[0]).toMatchObject({ ok: false, responseStatus: 503, error: "HTTP 503" })
      expect((yield* target.received)).toHaveLength(1)
    }).pipe(Effect.scoped))
})

layer(TestServer(baseFixture, { webhookAllowPrivateTargets: false }).pipe(Layer.provide(publicResolver)))(
  "webhook settings written at once",
  (it) => {
    it.effect("first PUTs of one scope at once all answer 200 and leave one webhook, the last one's", () =>
      Effect.gen(function*() {
        const api = yield* clientFor(TOKENS.editor)
        const urls = ["a", "b", "c", "d"].map((name) => `https://hooks.example.com/${name}`)
        const answers = yield* Effect.all(
          urls.map((targetUrl) => api.surveyWebhook.put({ ...survey("srv_main"), payload: { targetUrl } })),
          { concurrency: "unbounded" }
        )
        expect(answers.map((registered) => registered.targetUrl)).toEqual(urls)
        const sql = yield* SqlClient.SqlClient
        const rows = decodeAs(
          Schema.Array(Schema.Struct({ targetUrl: Schema.String })),
          yield* sql`SELECT target_url FROM webhooks WHERE survey_id = 'srv_main'`.pipe(Effect.orDie)
        )
        expect(rows).toHaveLength(1)
        expect(urls).toContain(rows[0]?.targetUrl)
        expect((yield* api.surveyWebhook.get(survey("srv_main"))).targetUrl).toBe(rows[0]?.targetUrl)
      }))
  }
)
