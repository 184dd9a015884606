import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { MAX_JSON_DEPTH } from "../src/Http/JsonBody.js"
import { TOKENS } from "./support/Fixtures.js"
import { respondentFixture } from "./support/RespondentFixtures.js"
import { type Answered, bodyOf, call, decodeAs, ErrorBody, get, TestServer } from "./support/TestServer.js"

const SurveyPageBody = Schema.Struct({ respondentToken: Schema.String })
const Saved = Schema.Struct({ responseId: Schema.String })

const refused = (res: Answered, status: number, code: string, label: string) => {
  expect(res.status, `${label}: ${res.text}`).toBe(status)
  expect(bodyOf(ErrorBody, res).code, label).toBe(code)
}

const nested = (depth: number, inner = "1") => `${"[".repeat(depth)}${inner}${"]".repeat(depth)}`

const multipartBody = [
  "--XyZ",
  "Content-Disposition: form-data; name=\"externalUserId\"",
  "",
  "user-1",
  "--XyZ--",
  ""
].join("\r\n")

/** Bodies under content types the API does not take: each is answered 400, none is read as JSON. */
const foreignBodies: ReadonlyArray<readonly [string, string]> = [
  ["multipart/form-data; boundary=XyZ", "not multipart at all"],
  ["multipart/form-data; boundary=XyZ", multipartBody],
  ["multipart/form-data", ""],
  ["application/x-www-form-urlencoded", "externalUserId=user-1&targetUrl=https%3A%2F%2Fhooks.example.com%2F"],
  ["text/plain", JSON.stringify({ externalUserId: "user-1", targetUrl: "https://hooks.example.com/" })],
  ["application/jsonx", JSON.stringify({ externalUserId: "user-1" })],
  ["application/octet-stream", "\u0000\u0001"]
]

const Counts = Schema.Struct({ sessions: Schema.Number, responses: Schema.Number, webhooks: Schema.Number })

const counts = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`
    SELECT (SELECT count(*) FROM embed_sessions) AS sessions,
           (SELECT count(*) FROM responses) AS responses,
           (SELECT count(*) FROM webhooks) AS webhooks`.pipe(Effect.orDie)
  const [row] = decodeAs(Schema.Tuple(Counts), rows)
  return row
})

const respondentToken = Effect.map(
  call("GET", "/s/srv_all", { headers: { accept: "application/json" } }),
  (res) => bodyOf(SurveyPageBody, res).respondentToken
)

layer(TestServer(respondentFixture))("hostile input", (it) => {
  const apiWrites = [
    ["POST", "/api/v1/surveys/srv_all/embed-sessions"],
    ["PUT", "/api/v1/surveys/srv_all/webhook"],
    ["PUT", "/api/v1/webhooks"]
  ] as const

  it.effect("bodies that are not JSON are refused with 400 on every endpoint that takes a body, changing nothing", () =>
    Effect.gen(function*() {
      const before = yield* counts
      const token = yield* respondentToken
      const saved = yield* call("POST", "/respond/v1/responses", { token, body: "{}" })
      const responseId = bodyOf(Saved, saved).responseId
      const afterStart = yield* counts
      const targets = [
        ...apiWrites.map(([method, path]) => [method, path, TOKENS.editor] as const),
        ["POST", "/respond/v1/responses", token] as const,
        ["PATCH", `/respond/v1/responses/${responseId}`, token] as const
      ]
      for (const [method, path, bearer] of targets) {
        for (const [contentType, body] of foreignBodies) {
          const res = yield* call(method, path, { token: bearer, body, headers: { "content-type": contentType } })
          refused(res, 400, "invalid_request", `${method} ${path} as ${contentType}`)
        }
      }
      expect(yield* counts).toEqual(afterStart)
      expect(afterStart.responses).toBe(before.responses + 1)
    }))

  it.effect("a read-only key is refused 403 before its body is read, whatever the body", () =>
    Effect.gen(function*() {
      const before = yield* counts
      const writes = [...apiWrites, ["DELETE", "/api/v1/webhooks"] as const, ["POST", "/api/v1/webhooks/test"] as const]
      for (const [method, path] of writes) {
        for (const [contentType, body] of [...foreignBodies, ["application/json", nested(20_000)] as const]) {
          const res = yield* call(method, path, { token: TOKENS.viewer, body, headers: { "content-type": contentType } })
          refused(res, 403, "forbidden", `viewer ${method} ${path} as ${contentType}`)
        }
        // Authentication comes first of all.
        const anonymous = yield* call(method, path, { body: multipartBody, headers: { "content-type": "multipart/form-data; boundary=XyZ" } })
        refused(anonymous, 401, "unauthorized", `anonymous ${method} ${path}`)
      }
      expect(yield* counts).toEqual(before)
    }))

  it.effect("JSON with any charset parameter, or no content type at all, is read as JSON", () =>
    Effect.gen(function*() {
      for (const contentType of ["application/json; charset=utf-8", "Application/JSON;charset=UTF-8", "application/json ; charset=\"utf-8\""]) {
        const res = yield* call("POST", "/api/v1/surveys/srv_all/embed-sessions", {
          token: TOKENS.editor,
          body: JSON.stringify({ externalUserId: "charset-user" }),
          headers: { "content-type": contentType }
        })
        expect(res.status, contentType).toBe(201)
      }
      const token = yield* respondentToken
      const res = yield* call("POST", "/respond/v1/responses", {
        token,
        body: "{}",
        headers: { "content-type": "application/json; charset=utf-8" }
      })
      expect(res.status).toBe(201)
    }))

  it.effect(`JSON nested deeper than ${MAX_JSON_DEPTH} levels is refused with 400; up to that depth it is decoded`, () =>
    Effect.gen(function*() {
      const token = yield* respondentToken
      const targets = [
        ...apiWrites.map(([method, path]) => [method, path, TOKENS.editor] as const),
        ["POST", "/respond/v1/responses", token] as const
      ]
      const before = yield* counts
      for (const [method, path, bearer] of targets) {
        for (const body of [nested(15_000), `{"externalUserId":${nested(MAX_JSON_DEPTH)},"answers":[]}`]) {
          const res = yield* call(method, path, { token: bearer, body })
          refused(res, 400, "invalid_request", `${method} ${path} at depth ${body.length}`)
          expect(res.text).not.toMatch(/RangeError|call stack|\n\s+at /)
        }
        // Within the bound the body reaches the schema, which names the field at fault.
        const shallow = yield* call(method, path, {
          token: bearer,
          body: `{"externalUserId":${nested(MAX_JSON_DEPTH - 2)},"targetUrl":${nested(MAX_JSON_DEPTH - 2)}}`
        })
        refused(shallow, 400, "invalid_request", `${method} ${path} shallow`)
        expect(bodyOf(ErrorBody, shallow).issues?.[0]?.path, `${method} ${path}`).toMatch(/externalUserId|targetUrl|^$/)
      }
      // Brackets inside strings are text, not nesting.
      const inString = yield* call("POST", "/api/v1/surveys/srv_all/embed-sessions", {
        token: TOKENS.editor,
        body: JSON.stringify({ externalUserId: `${"[{".repeat(100)}"\\` })
      })
      expect(inString.status, inString.text).toBe(201)
      const after = yield* counts
      expect(after.responses).toBe(before.responses)
      expect(after.webhooks).toBe(before.webhooks)
    }))

  it.effect("instants that do not exist on the calendar or the clock are refused with 400", () =>
    Effect.gen(function*() {
      const path = "/api/v1/surveys/srv_all/responses"
      for (
        const instant of [
          "2026-02-30T00:00:00Z",
          "2025-02-29T00:00:00Z",
          "2100-02-29T00:00:00Z",
          "2026-04-31T00:00:00Z",
          "2026-13-01T00:00:00Z",
          "2026-00-01T00:00:00Z",
          "2026-01-00T00:00:00Z",
          "2026-01-01T24:00:00Z",
          "2026-01-01T23:60:00Z",
          "2026-01-01T23:59:60Z",
          "2026-01-01T00:00:00+24:00",
          "2026-01-01T00:00:00+05:60"
        ]
      ) {
        for (const format of ["", "&format=csv"]) {
          const res = yield* get(`${path}?createdAfter=${encodeURIComponent(instant)}${format}`, TOKENS.editor)
          refused(res, 400, "invalid_request", instant)
          expect(bodyOf(ErrorBody, res).issues?.[0]?.path).toBe("createdAfter")
        }
      }
      for (const instant of ["2024-02-29T00:00:00Z", "2000-02-29T23:59:59.999+23:59", "2026-12-31T00:00-00:00"]) {
        const res = yield* get(`${path}?createdAfter=${encodeURIComponent(instant)}`, TOKENS.editor)
        expect(res.status, instant).toBe(200)
      }
    }))

  it.effect("webhook URLs on port 0 or beyond 65535 are refused like any invalid URL", () =>
    Effect.gen(function*() {
      const before = yield* counts
      for (const path of ["/api/v1/webhooks", "/api/v1/surveys/srv_all/webhook"]) {
        for (const targetUrl of ["https://hooks.example.com:0/in", "https://hooks.example.com:000/in", "https://hooks.example.com:65536/in"]) {
          const res = yield* call("PUT", path, { token: TOKENS.editor, body: JSON.stringify({ targetUrl }) })
          refused(res, 400, "invalid_request", targetUrl)
          expect(bodyOf(ErrorBody, res).issues?.[0]?.path).toBe("targetUrl")
        }
      }
      expect(yield* counts).toEqual(before)
    }))
})
