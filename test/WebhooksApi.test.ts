import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { Webhook } from "standardwebhooks"
import { EventEnvelope } from "../src/Domain/Event.js"
import { DeliveryLog, WebhookRegistered, WebhookSettings } from "../src/Webhooks/Api.js"
import { Resolver } from "../src/Webhooks/UrlPolicy.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { bodyOf, call, decodeAs, ErrorBody, ErrorCode, get, TestServer } from "./support/TestServer.js"
import { receiver } from "./support/WebhookReceiver.js"

const put = (path: string, token: string, body: unknown) =>
  call("PUT", path, { token, body: typeof body === "string" ? body : JSON.stringify(body) })

const InvalidBody = Schema.Struct({
  code: Schema.Literal("invalid_request"),
  message: Schema.String,
  issues: Schema.Array(Schema.Struct({ path: Schema.String, message: Schema.String }))
})

const NONE = { enabled: false, targetUrl: null, events: [], disabledReason: null }
const V1_SET = ["response.completed", "survey.published", "survey.closed"]

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
        const survey = yield* get("/api/v1/surveys/srv_closed/webhook", TOKENS.viewer)
        expect(survey.status).toBe(200)
        expect(survey.body).toEqual(NONE)
        const workspace = yield* get("/api/v1/webhooks", TOKENS.other)
        expect(workspace.body).toEqual(NONE)
      }))

    it.effect("PUT registers, returns a new secret once, and GET never shows it", () =>
      Effect.gen(function*() {
        const first = yield* put("/api/v1/surveys/srv_main/webhook", TOKENS.editor, {
          targetUrl: "https://hooks.example.com/survey"
        })
        expect(first.status).toBe(200)
        const body = bodyOf(WebhookRegistered, first)
        expect(body.enabled).toBe(true)
        expect(body.targetUrl).toBe("https://hooks.example.com/survey")
        expect(body.signingSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
        const again = yield* put("/api/v1/surveys/srv_main/webhook", TOKENS.editor, {
          targetUrl: "https://hooks.example.com/survey2"
        })
        const rotated = bodyOf(WebhookRegistered, again)
        expect(rotated.signingSecret).not.toBe(body.signingSecret)
        const read = yield* get("/api/v1/surveys/srv_main/webhook", TOKENS.viewer)
        expect(read.body).toEqual({
          enabled: true,
          targetUrl: "https://hooks.example.com/survey2",
          events: V1_SET,
          disabledReason: null
        })
        expect(read.text).not.toContain("whsec_")
        // The workspace webhook is separate and unaffected.
        expect((yield* get("/api/v1/webhooks", TOKENS.editor)).body).toEqual(NONE)
      }))

    it.effect("workspace PUT, GET and DELETE", () =>
      Effect.gen(function*() {
        const registered = yield* put("/api/v1/webhooks", TOKENS.other, { targetUrl: "https://hooks.example.com/ws" })
        expect(registered.status).toBe(200)
        const secret = bodyOf(WebhookRegistered, registered).signingSecret
        expect(secret).toMatch(/^whsec_/)
        const read = yield* get("/api/v1/webhooks", TOKENS.other)
        expect(read.body).toEqual({
          enabled: true,
          targetUrl: "https://hooks.example.com/ws",
          events: V1_SET,
          disabledReason: null
        })
        const removed = yield* call("DELETE", "/api/v1/webhooks", { token: TOKENS.other })
        expect(removed.status).toBe(204)
        expect(removed.text).toBe("")
        expect((yield* get("/api/v1/webhooks", TOKENS.other)).body).toEqual(NONE)
        // Deleting twice is harmless.
        expect((yield* call("DELETE", "/api/v1/webhooks", { token: TOKENS.other })).status).toBe(204)
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
        for (const targetUrl of bad) {
          const res = yield* put("/api/v1/webhooks", TOKENS.editor, { targetUrl })
          expect(res.status, targetUrl).toBe(400)
          const body = bodyOf(ErrorBody, res)
          expect(body.code).toBe("invalid_request")
          expect(body.message).not.toContain("secret")
        }
        for (const raw of ["", "{", "[]", "{\"targetUrl\": 5}", "{}", "null"]) {
          const res = yield* put("/api/v1/surveys/srv_draft/webhook", TOKENS.editor, raw)
          expect(res.status, raw).toBe(400)
          expect(bodyOf(ErrorCode, res).code).toBe("invalid_request")
        }
        expect((yield* get("/api/v1/webhooks", TOKENS.editor)).body).toEqual(NONE)
        expect((yield* get("/api/v1/surveys/srv_draft/webhook", TOKENS.editor)).body).toEqual(NONE)
      }))

    it.effect("PUT takes an event filter, answers it, and GET shows it; the v1 set when omitted", () =>
      Effect.gen(function*() {
        const chosen = ["response.updated", "response.created", "survey.closed"]
        const res = yield* put("/api/v1/surveys/srv_closed/webhook", TOKENS.editor, {
          targetUrl: "https://hooks.example.com/filtered",
          events: chosen
        })
        expect(res.status).toBe(200)
        expect(bodyOf(WebhookRegistered, res)).toMatchObject({ events: chosen, disabledReason: null, enabled: true })
        const read = yield* get("/api/v1/surveys/srv_closed/webhook", TOKENS.viewer)
        // Catalogue order, whatever order the PUT gave.
        expect(read.body).toEqual({
          enabled: true,
          targetUrl: "https://hooks.example.com/filtered",
          events: ["survey.closed", "response.created", "response.updated"],
          disabledReason: null
        })
        // A later PUT without `events` goes back to the v1 set.
        const again = yield* put("/api/v1/surveys/srv_closed/webhook", TOKENS.editor, {
          targetUrl: "https://hooks.example.com/filtered"
        })
        expect(bodyOf(WebhookRegistered, again).events).toEqual(V1_SET)
        expect(bodyOf(WebhookSettings, yield* get("/api/v1/surveys/srv_closed/webhook", TOKENS.viewer)).events)
          .toEqual(V1_SET)
      }))

    it.effect("refuses unknown, repeated and empty event lists with 400 naming the issue and changes nothing", () =>
      Effect.gen(function*() {
        const target = "https://hooks.example.com/events"
        yield* put("/api/v1/webhooks", TOKENS.other, { targetUrl: target, events: ["survey.published"] })
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
        expect((yield* get("/api/v1/webhooks", TOKENS.other)).body).toEqual({
          enabled: true,
          targetUrl: target,
          events: ["survey.published"],
          disabledReason: null
        })
        expect((yield* get("/api/v1/surveys/srv_other/webhook", TOKENS.other)).body).toEqual(NONE)
        expect((yield* call("DELETE", "/api/v1/webhooks", { token: TOKENS.other })).status).toBe(204)
      }))

    it.effect("applies the role and scope rules", () =>
      Effect.gen(function*() {
        const target = { targetUrl: "https://hooks.example.com/x" }
        const forbidden = (res: { status: number; body: unknown }) => {
          expect(res.status).toBe(403)
          expect(bodyOf(ErrorCode, res).code).toBe("forbidden")
        }
        forbidden(yield* put("/api/v1/webhooks", TOKENS.viewer, target))
        forbidden(yield* put("/api/v1/surveys/srv_main/webhook", TOKENS.viewer, target))
        forbidden(yield* call("DELETE", "/api/v1/webhooks", { token: TOKENS.viewer }))
        forbidden(yield* call("POST", "/api/v1/webhooks/test", { token: TOKENS.viewer }))
        // A survey-limited key cannot use any workspace webhook endpoint.
        forbidden(yield* get("/api/v1/webhooks", TOKENS.limited))
        forbidden(yield* put("/api/v1/webhooks", TOKENS.limited, target))
        forbidden(yield* call("DELETE", "/api/v1/webhooks", { token: TOKENS.limited }))
        forbidden(yield* call("POST", "/api/v1/webhooks/test", { token: TOKENS.limited }))
        forbidden(yield* get("/api/v1/webhooks/deliveries", TOKENS.limited))
        // ...but may manage the webhook of a survey in its list, and not of another.
        expect((yield* put("/api/v1/surveys/srv_main/webhook", TOKENS.limited, target)).status).toBe(200)
        forbidden(yield* get("/api/v1/surveys/srv_draft/webhook", TOKENS.limited))
        // Another workspace's, trashed and missing surveys are 404.
        for (const id of ["srv_other", "srv_trashed", "srv_nope"]) {
          const res = yield* get(`/api/v1/surveys/${id}/webhook`, TOKENS.editor)
          expect(res.status).toBe(404)
          expect((yield* get(`/api/v1/surveys/${id}/webhook/deliveries`, TOKENS.editor)).status).toBe(404)
          expect((yield* put(`/api/v1/surveys/${id}/webhook`, TOKENS.editor, target)).status).toBe(404)
        }
        expect((yield* get("/api/v1/webhooks", TOKENS.freePlan)).status).toBe(403)
        expect((yield* get("/api/v1/webhooks")).status).toBe(401)
      }))

    it.effect("delivery logs validate limit and answer an empty list at first", () =>
      Effect.gen(function*() {
        const empty = yield* get("/api/v1/webhooks/deliveries", TOKENS.other)
        expect(empty.status).toBe(200)
        expect(empty.body).toEqual({ data: [] })
        for (const limit of ["0", "101", "abc", "1.5"]) {
          const res = yield* get(`/api/v1/webhooks/deliveries?limit=${limit}`, TOKENS.editor)
          expect(res.status, limit).toBe(400)
          expect(bodyOf(ErrorCode, res).code).toBe("invalid_request")
          const survey = yield* get(`/api/v1/surveys/srv_main/webhook/deliveries?limit=${limit}`, TOKENS.editor)
          expect(survey.status, limit).toBe(400)
        }
      }))

    it.effect("POST /surveys/{id}/webhook/test: 400 without a webhook, 403 for viewers and other surveys' keys, 404", () =>
      Effect.gen(function*() {
        const test = (id: string, token: string) => call("POST", `/api/v1/surveys/${id}/webhook/test`, { token })
        const none = yield* test("srv_draft", TOKENS.editor)
        expect(none.status).toBe(400)
        expect(bodyOf(ErrorCode, none).code).toBe("invalid_request")
        expect((yield* test("srv_main", TOKENS.viewer)).status).toBe(403)
        expect((yield* test("srv_draft", TOKENS.limited)).status).toBe(403)
        for (const id of ["srv_other", "srv_trashed", "srv_nope"]) {
          const res = yield* test(id, TOKENS.editor)
          expect(res.status, id).toBe(404)
          expect(bodyOf(ErrorCode, res).code).toBe("not_found")
        }
      }))

    it.effect("POST /webhooks/test without a workspace webhook answers 400", () =>
      Effect.gen(function*() {
        const res = yield* call("POST", "/api/v1/webhooks/test", { token: TOKENS.other })
        expect(res.status).toBe(400)
        expect(bodyOf(ErrorCode, res).code).toBe("invalid_request")
      }))
  }
)

// Live clock: standardwebhooks refuses timestamps far from the present.
layer(TestServer(baseFixture), { excludeTestServices: true })("POST /webhooks/test", (it) => {
  it.effect("sends one signed webhook.test event that standardwebhooks verifies, and logs it", () =>
    Effect.gen(function*() {
      const target = yield* receiver()
      const registered = yield* put("/api/v1/webhooks", TOKENS.editor, { targetUrl: target.url })
      const secret = bodyOf(WebhookRegistered, registered).signingSecret ?? ""
      const res = yield* call("POST", "/api/v1/webhooks/test", { token: TOKENS.editor })
      expect(res.status).toBe(200)
      expect(res.body).toEqual({ delivered: true })
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
      const registered = yield* put("/api/v1/surveys/srv_closed/webhook", TOKENS.editor, {
        targetUrl: target.url,
        events: ["response.deleted"]
      })
      const secret = bodyOf(WebhookRegistered, registered).signingSecret
      const res = yield* call("POST", "/api/v1/surveys/srv_closed/webhook/test", { token: TOKENS.editor })
      expect(res.status).toBe(200)
      expect(res.body).toEqual({ delivered: true })
      const [delivery] = yield* target.received
      if (delivery === undefined) return yield* Effect.dieMessage("nothing received")
      const verified = decodeAs(EventEnvelope, new Webhook(secret).verify(delivery.body, delivery.headers))
      expect(verified).toMatchObject({ type: "webhook.test", formId: "srv_closed", data: {} })
      const log = bodyOf(DeliveryLog, yield* get("/api/v1/surveys/srv_closed/webhook/deliveries", TOKENS.editor))
      expect(log.data).toHaveLength(1)
      expect(log.data[0]).toMatchObject({ eventId: verified.id, eventType: "webhook.test", surveyId: "srv_closed", ok: true })
      // Not in the workspace webhook's log.
      const workspaceLog = bodyOf(DeliveryLog, yield* get("/api/v1/webhooks/deliveries", TOKENS.editor))
      expect(workspaceLog.data.map((a) => a.eventId)).not.toContain(verified.id)
    }).pipe(Effect.scoped))

  it.effect("answers delivered false, and logs the status, when the endpoint refuses", () =>
    Effect.gen(function*() {
      const target = yield* receiver(() => new Response("nope", { status: 503 }))
      yield* put("/api/v1/webhooks", TOKENS.editor, { targetUrl: target.url })
      const res = yield* call("POST", "/api/v1/webhooks/test", { token: TOKENS.editor })
      expect(res.body).toEqual({ delivered: false })
      const log = bodyOf(DeliveryLog, yield* get("/api/v1/webhooks/deliveries?limit=1", TOKENS.editor))
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
        const urls = ["a", "b", "c", "d"].map((name) => `https://hooks.example.com/${name}`)
        const answers = yield* Effect.all(
          urls.map((targetUrl) => put("/api/v1/surveys/srv_main/webhook", TOKENS.editor, { targetUrl })),
          { concurrency: "unbounded" }
        )
        expect(answers.map((res) => res.status)).toEqual([200, 200, 200, 200])
        const sql = yield* SqlClient.SqlClient
        const rows = decodeAs(
          Schema.Array(Schema.Struct({ targetUrl: Schema.String })),
          yield* sql`SELECT target_url FROM webhooks WHERE survey_id = 'srv_main'`.pipe(Effect.orDie)
        )
        expect(rows).toHaveLength(1)
        expect(urls).toContain(rows[0]?.targetUrl)
        const read = yield* get("/api/v1/surveys/srv_main/webhook", TOKENS.editor)
        expect(bodyOf(WebhookSettings, read).targetUrl).toBe(rows[0]?.targetUrl)
      }))
  }
)
