import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import fc from "fast-check"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { call, TestServer } from "./support/TestServer.js"

const endpoints = [
  "/api/v1/surveys",
  "/api/v1/surveys/{id}",
  "/api/v1/surveys/{id}/questions",
  "/api/v1/surveys/{id}/responses",
  "/api/v1/surveys/{id}/responses/{rid}"
]

const params = ["limit", "cursor", "status", "createdAfter", "format", "x", "limit[]", ""]
const nasty = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.constantFrom("0", "-1", "101", "1e3", "NaN", "25", "completed", "csv", "2026-01-01T00:00:00Z", "%00", "%", "\u00e9", "[]", "{}"),
  fc.integer().map(String),
  fc.base64String({ maxLength: 60 })
)

const queryArb = fc.array(fc.tuple(fc.constantFrom(...params), nasty), { maxLength: 5 }).map((pairs) =>
  pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join("&")
)
const segmentArb = fc.oneof(
  fc.constantFrom("srv_main", "srv_other", "srv_trashed", "rsp_1"),
  fc.string({ minLength: 1, maxLength: 30 }).map(encodeURIComponent)
)
const authArb = fc.oneof(
  fc.constant(`Bearer ${TOKENS.editor}`),
  fc.constant(`Bearer ${TOKENS.limited}`),
  fc.constant(`Bearer ${TOKENS.freePlan}`),
  fc.constant(`bearer ${TOKENS.viewer}`),
  fc.string({ maxLength: 60 }).filter((s) => /^[\x20-\x7e]*$/.test(s)),
  fc.string({ maxLength: 40 }).filter((s) => /^[\x20-\x7e]*$/.test(s)).map((s) => `Bearer ${s}`)
)
const headerArb = fc.dictionary(
  fc.constantFrom("x-request-id", "accept", "content-type", "x-forwarded-for", "if-none-match"),
  fc.string({ maxLength: 40 }).filter((s) => /^[\x20-\x7e]*$/.test(s)),
  { maxKeys: 3 }
)

layer(TestServer(baseFixture))("bad input never reaches a 500 or framework internals", (it) => {
  it.effect("random query strings, path segments and headers on every endpoint", () =>
    Effect.gen(function*() {
      const samples = fc.sample(
        fc.record({
          endpoint: fc.constantFrom(...endpoints),
          id: segmentArb,
          rid: segmentArb,
          query: queryArb,
          auth: fc.option(authArb, { nil: undefined }),
          headers: headerArb
        }),
        { numRuns: 400, seed: 20261122 }
      )
      for (const sample of samples) {
        const path = sample.endpoint.replace("{id}", sample.id).replace("{rid}", sample.rid)
        const headers: Record<string, string> = { ...sample.headers }
        if (sample.auth !== undefined) headers.authorization = sample.auth
        const res = yield* call("GET", `${path}${sample.query === "" ? "" : `?${sample.query}`}`, { headers })
        const label = JSON.stringify({ path, query: sample.query, headers })
        expect([200, 400, 401, 403, 404], label).toContain(res.status)
        const csv = res.status === 200 && res.headers["content-type"]?.startsWith("text/csv") === true
        // Only a successful export of the responses list may answer anything but JSON.
        if (csv) expect(path, label).toMatch(/\/responses$/)
        else expect(res.headers["content-type"], label).toContain("application/json")
        expect(res.text, label).not.toContain("_tag")
        expect(res.text, label).not.toMatch(/ParseError|SqlError|at .*\.ts:\d+/)
        if (res.status !== 200) {
          expect(res.body, label).toMatchObject({ code: expect.any(String), message: expect.any(String) })
        }
      }
    }), { timeout: 120_000 })

  it.effect("a body declared larger than 64 KiB is refused unread with invalid_request, and changes nothing", () =>
    Effect.gen(function*() {
      const big = JSON.stringify({ externalUserId: "user-1", padding: "x".repeat(70 * 1024) })
      const refused = yield* call("POST", "/api/v1/surveys/srv_main/embed-sessions", { token: TOKENS.editor, body: big })
      expect(refused.status).toBe(400)
      expect(refused.body).toMatchObject({
        code: "invalid_request",
        message: "The request body exceeds 65536 bytes.",
        issues: [{ path: "", message: "at most 65536 bytes" }]
      })
      const webhook = yield* call("PUT", "/api/v1/surveys/srv_main/webhook", {
        token: TOKENS.editor,
        body: JSON.stringify({ url: `https://example.com/${"a".repeat(70 * 1024)}` })
      })
      expect(webhook.status).toBe(400)
      const unchanged = yield* call("GET", "/api/v1/surveys/srv_main/webhook", { token: TOKENS.editor })
      expect(unchanged.status).toBe(200)
      expect(unchanged.body).toMatchObject({ enabled: false })
      // Just under the limit, the body is read and judged on its content as before.
      const small = yield* call("POST", "/api/v1/surveys/srv_main/embed-sessions", {
        token: TOKENS.editor,
        body: JSON.stringify({ externalUserId: "user-1" })
      })
      expect(small.status).toBe(201)
    }))
})
