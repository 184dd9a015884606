import { expect, layer } from "@effect/vitest"
import Ajv2020 from "ajv/dist/2020.js"
import { Effect, Schema, TestClock } from "effect"
import fc from "fast-check"
import { TOKENS } from "./support/Fixtures.js"
import { respondentFixture } from "./support/RespondentFixtures.js"
import { bodyOf, call, get, TestServer } from "./support/TestServer.js"

/** The parts of the served OpenAPI document that requests are made from. */
const Media = Schema.Struct({ schema: Schema.Unknown })
const Content = Schema.Record({ key: Schema.String, value: Media })
const Operation = Schema.Struct({
  operationId: Schema.String,
  parameters: Schema.Array(Schema.Struct({
    name: Schema.String,
    in: Schema.Literal("path", "query", "header", "cookie"),
    required: Schema.Boolean,
    schema: Schema.Unknown
  })),
  requestBody: Schema.optional(Schema.Struct({ content: Content })),
  responses: Schema.Record({
    key: Schema.String,
    value: Schema.Struct({ description: Schema.String, content: Schema.optional(Content) })
  })
})
type Operation = typeof Operation.Type
const Document = Schema.Struct({
  info: Schema.Struct({ description: Schema.String }),
  paths: Schema.Record({ key: Schema.String, value: Schema.Record({ key: Schema.String, value: Operation }) }),
  components: Schema.Struct({ schemas: Schema.Record({ key: Schema.String, value: Schema.Unknown }) })
})

const Enumerated = Schema.Struct({ enum: Schema.Array(Schema.String) })

const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`

/** A dot segment or an empty one is resolved by the URL itself, into another operation's path. */
const staysInPlace = (segment: string) => !/^(\.|%2e){0,2}$/i.test(segment)

const pathValue = fc.oneof(
  fc.constantFrom("srv_main", "srv_all", "srv_draft", "srv_closed", "srv_trashed", "srv_other", "rsp_1", "rsp_2"),
  fc.constantFrom("%", "%25", "%00", "%ZZ", "...", "%2F", "null", "0", "-1", "srv_main%20", "\u00e9", "%C0%AF"),
  fc.string({ maxLength: 40 }).map(encodeURIComponent).filter(staysInPlace),
  fc.integer({ min: 200, max: 4000 }).map((n) => "x".repeat(n))
)

const anyQueryValue = fc.oneof(
  fc.string({ maxLength: 30 }),
  fc.constantFrom("", "0", "-1", "101", "1e2", "1.5", "NaN", "Infinity", "0x10", " 5", "csv", "all", "[]", "{}"),
  fc.constantFrom(
    "2026-01-01T00:00:00Z",
    "2026-02-30T00:00:00Z",
    "2026-01-01T24:00:00+00:00",
    "2026-01-01",
    "9999-12-31T23:59:59.999999999-23:59",
    "0000-01-01T00:00:00Z"
  ),
  fc.integer().map(String),
  fc.base64String({ maxLength: 80 }),
  fc.integer({ min: 1000, max: 9000 }).map((n) => "9".repeat(n))
)

/** A value of the parameter's declared type most of the time, so requests get past the first check. */
const queryValue = (schema: unknown) => {
  const listed = Schema.decodeUnknownOption(Enumerated)(schema)
  const valid = listed._tag === "Some" && listed.value.enum.length > 0
    ? fc.constantFrom(...listed.value.enum)
    : fc.oneof(fc.integer({ min: 1, max: 100 }).map(String), fc.constant("2026-01-05T00:00:00Z"))
  return fc.oneof({ arbitrary: valid, weight: 2 }, { arbitrary: anyQueryValue, weight: 3 })
}

/** Mostly a working key, or a respondent token of a survey page for the respondent API. */
const authorization = (respondentToken: string) => fc.oneof(
  { arbitrary: fc.constant(`Bearer ${TOKENS.editor}`), weight: 6 },
  { arbitrary: fc.constant(`Bearer ${respondentToken}`), weight: 6 },
  fc.constantFrom(
    `Bearer ${TOKENS.viewer}`,
    `Bearer ${TOKENS.limited}`,
    `Bearer ${TOKENS.freePlan}`,
    `Bearer ${TOKENS.revoked}`,
    `Bearer ${TOKENS.formerMember}`,
    `bearer ${TOKENS.editor}`,
    `Bearer  ${TOKENS.editor} `,
    `Basic ${btoa("a:b")}`,
    "Bearer",
    ""
  ),
  fc.string({ maxLength: 300 }).filter((s) => /^[\x20-\x7e]*$/.test(s)).map((s) => `Bearer ${s}`)
)

const printable = (maxLength: number) => fc.string({ maxLength }).filter((s) => /^[\x20-\x7e]*$/.test(s))

const oddHeaders = fc.dictionary(
  fc.constantFrom("accept", "x-request-id", "if-none-match", "accept-encoding", "x-forwarded-for", "origin", "range"),
  fc.oneof(
    printable(60),
    fc.constantFrom("text/csv", "*/*", "application/xml", "text/html", "bytes=0-10", "gzip, br", "null"),
    fc.integer({ min: 500, max: 4000 }).map((n) => "a".repeat(n))
  ),
  { maxKeys: 3 }
)

const headerValue = fc.oneof(
  fc.constantFrom("key-1", "key-2", "6f1c1f8e-6d1a-4c55-9a52-0d9b3a1f2e7c", "", " ", "a".repeat(300)),
  printable(80)
)

const jsonBody = fc.oneof(
  fc.json({ depthSize: "medium" }),
  fc.constantFrom(
    "",
    "{",
    "null",
    "[]",
    "\"text\"",
    "{\"externalUserId\":\"fuzz-user\"}",
    "{\"externalUserId\":null}",
    "{\"externalUserId\":[\"a\"]}",
    "{\"targetUrl\":\"https://127.0.0.1/\"}",
    "{\"targetUrl\":\"https://hooks.example.com:0/\"}",
    "{\"targetUrl\":\"http://10.0.0.1/\",\"events\":[\"nope\"]}",
    "{\"targetUrl\":42}",
    "{\"__proto__\":{\"x\":1}}",
    "\uFEFF{}"
  ),
  fc.integer({ min: 30, max: 20_000 }).map(nested),
  fc.integer({ min: 60_000, max: 80_000 }).map((n) => JSON.stringify({ externalUserId: "x".repeat(n) }))
)

const contentType = fc.oneof(
  { arbitrary: fc.constant("application/json"), weight: 4 },
  fc.constantFrom(
    "application/json; charset=utf-8",
    "multipart/form-data; boundary=fuzz",
    "multipart/form-data",
    "application/x-www-form-urlencoded",
    "text/plain",
    "application/octet-stream",
    "application/json-patch+json",
    "",
    ";;;"
  )
)

const request = (path: string, method: string, operation: Operation, respondentToken: string) => {
  const params = operation.parameters
  return fc.record({
    path: fc.record(Object.fromEntries(params.filter((p) => p.in === "path").map((p) => [p.name, pathValue]))),
    query: fc.array(
      fc.oneof(
        ...params.filter((p) => p.in === "query").map((p) => fc.tuple(fc.constant(p.name), queryValue(p.schema))),
        fc.tuple(fc.constantFrom("format", "x", "limit[]", "", "cursor", "__proto__"), anyQueryValue)
      ),
      { maxLength: 5 }
    ),
    authorization: fc.option(authorization(respondentToken), { nil: undefined, freq: 8 }),
    headers: oddHeaders,
    // Declared headers (Idempotency-Key) from a small pool, so that keys are reused with other bodies.
    declared: fc.record(
      Object.fromEntries(params.filter((p) => p.in === "header").map((p) => [p.name, headerValue])),
      { requiredKeys: [] }
    ),
    body: method === "get" ? fc.constant(undefined) : fc.option(fc.tuple(contentType, jsonBody), { nil: undefined, freq: 6 })
  }).map((sample) => {
    const url = path.replace(/\{(\w+)\}/g, (_, name: string) => sample.path[name] ?? "x")
    const query = sample.query.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join("&")
    const headers: Record<string, string> = { ...sample.headers }
    for (const [name, value] of Object.entries(sample.declared)) if (value !== undefined) headers[name] = value
    if (sample.authorization !== undefined) headers.authorization = sample.authorization
    if (sample.body !== undefined && sample.body[0] !== "") headers["content-type"] = sample.body[0]
    return {
      method: method.toUpperCase(),
      url: query === "" ? url : `${url}?${query}`,
      headers,
      body: sample.body?.[1]
    }
  })
}

const methods = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const
const asMethod = (method: string) => methods.find((m) => m === method) ?? "GET"

/** What a client must never see: framework and runtime internals. */
const internals = /_tag|HttpApiDecodeError|ParseError|SqlError|RangeError|SQLITE|MultipartError|RequestError|\n\s+at |\.ts:\d+|node_modules/


/** The formats the document declares, checked as strictly as the service writes them. */
const withFormats = (ajv: Ajv2020) =>
  ajv
    .addFormat("date-time", (text: string) => /^[+-]?\d{4,6}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/.test(text) && !Number.isNaN(Date.parse(text)))
    .addFormat("uri", (text: string) => URL.canParse(text))
    .addFormat("int32", { type: "number", validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31 })
    .addFormat("int64", { type: "number", validate: (n: number) => Number.isSafeInteger(n) })
layer(TestServer(respondentFixture))("the served OpenAPI document against the service", (it) => {
  it.effect("declares one schema per error code, as sent, nothing of the framework's own, and CSV apart", () =>
    Effect.gen(function*() {
      const served = yield* get("/openapi.json")
      expect(served.text).not.toMatch(/_tag|HttpApiDecodeError|PropertyKey/)
      const document = bodyOf(Document, served)
      expect(Object.keys(document.components.schemas).filter((name) => name.startsWith("Error_")).sort()).toEqual([
        "Error_forbidden",
        "Error_internal_error",
        "Error_invalid_request",
        "Error_not_found",
        "Error_plan_upgrade_required",
        "Error_precondition_failed",
        "Error_rate_limited",
        "Error_service_unavailable",
        "Error_unauthorized"
      ])
      const list = document.paths["/api/v1/surveys/{id}/responses"]?.get
      expect(Object.keys(list?.responses["200"]?.content ?? {})).toEqual(["application/json"])
      expect(list?.parameters.map((p) => p.name)).not.toContain("format")
      const csv = document.paths["/api/v1/surveys/{id}/responses.csv"]?.get
      expect(csv?.operationId).toBe("responses.exportCsv")
      expect(Object.keys(csv?.responses["200"]?.content ?? {})).toEqual(["text/csv"])
    }))

  it.effect("a request body with a field it does not name is answered as the document declares it", () =>
    Effect.gen(function*() {
      const document = bodyOf(Document, yield* get("/openapi.json"))
      const ajv = withFormats(new Ajv2020({ strict: false, allErrors: true }))
      const validatorOf = (schema: unknown) =>
        ajv.compile({ ...Schema.decodeUnknownSync(Schema.Object)(schema), components: document.components })
      const page = yield* call("GET", "/s/srv_all", { headers: { accept: "application/json" } })
      const respondentToken = bodyOf(Schema.Struct({ respondentToken: Schema.String }), page).respondentToken
      const started = yield* call("POST", "/respond/v1/responses", { token: respondentToken, body: JSON.stringify({ answers: [] }) })
      const responseId = bodyOf(Schema.Struct({ responseId: Schema.String }), started).responseId
      const now = yield* TestClock.currentTimeMillis
      const window = { since: new Date(now).toISOString(), until: new Date(now + 1_000).toISOString() }

      // A body each operation takes as it is, in an order that works (a webhook before its recovery).
      const accepted: ReadonlyArray<{ readonly operationId: string; readonly url: string; readonly token: string; readonly body: object }> = [
        { operationId: "embedSessions.create", url: "/api/v1/surveys/srv_all/embed-sessions", token: TOKENS.editor, body: { externalUserId: "extra-field" } },
        { operationId: "erasures.create", url: "/api/v1/erasures", token: TOKENS.editor, body: { externalUserId: "extra-field" } },
        { operationId: "surveyWebhook.put", url: "/api/v1/surveys/srv_all/webhook", token: TOKENS.editor, body: { targetUrl: "http://127.0.0.1:9/survey" } },
        { operationId: "surveyWebhook.recover", url: "/api/v1/surveys/srv_all/webhook/recover", token: TOKENS.editor, body: window },
        { operationId: "surveyWebhook.rotateSecret", url: "/api/v1/surveys/srv_all/webhook/secret/rotate", token: TOKENS.editor, body: {} },
        { operationId: "workspaceWebhooks.put", url: "/api/v1/webhooks", token: TOKENS.editor, body: { targetUrl: "http://127.0.0.1:9/workspace" } },
        { operationId: "workspaceWebhooks.recover", url: "/api/v1/webhooks/recover", token: TOKENS.editor, body: window },
        { operationId: "workspaceWebhooks.rotateSecret", url: "/api/v1/webhooks/secret/rotate", token: TOKENS.editor, body: {} },
        { operationId: "authoring.create", url: "/api/v1/surveys", token: TOKENS.editor, body: { title: "Extra field" } },
        { operationId: "authoring.update", url: "/api/v1/surveys/srv_draft", token: TOKENS.editor, body: { title: "Extra field" } },
        { operationId: "authoring.replaceQuestions", url: "/api/v1/surveys/srv_draft/questions", token: TOKENS.editor, body: { questions: [] } },
        { operationId: "respondent.start", url: "/respond/v1/responses", token: respondentToken, body: { answers: [] } },
        { operationId: "respondent.save", url: `/respond/v1/responses/${responseId}`, token: respondentToken, body: { answers: [] } }
      ]
      const withBodies = Object.entries(document.paths).flatMap(([, item]) =>
        Object.entries(item).flatMap(([method, operation]) => {
          const schema = operation.requestBody?.content["application/json"]?.schema
          return schema === undefined ? [] : [{ method, operationId: operation.operationId, operation, schema }]
        })
      )
      // Every operation that takes a body is tried here.
      expect(withBodies.map((o) => o.operationId).sort()).toEqual(accepted.map((a) => a.operationId).sort())

      const answers: Array<readonly [string, "taken" | "refused"]> = []
      for (const { body, operationId, token, url } of accepted) {
        const declared = withBodies.find((o) => o.operationId === operationId)
        if (declared === undefined) return yield* Effect.dieMessage(`${operationId} takes no body in the document`)
        const validate = validatorOf(declared.schema)
        expect(validate(body), `${operationId}: ${JSON.stringify(validate.errors)}`).toBe(true)
        const extended = { ...body, notInTheSchema: "x" }
        const allowed = validate(extended)
        const res = yield* call(asMethod(declared.method.toUpperCase()), url, { token, body: JSON.stringify(extended) })
        const label = `${operationId} -> ${res.status} ${res.text}`
        if (allowed) {
          expect(res.status, label).toBeLessThan(300)
          expect(declared.operation.responses[String(res.status)], label).toBeDefined()
        } else {
          expect(res.status, label).toBe(400)
          expect(bodyOf(Schema.Struct({ code: Schema.String }), res).code, label).toBe("invalid_request")
        }
        answers.push([operationId, allowed ? "taken" : "refused"])
      }
      // The integration API ignores fields it does not know; authoring, a secret's rotation and the respondent API refuse them.
      expect(Object.fromEntries(answers)).toEqual({
        "authoring.create": "refused",
        "authoring.update": "refused",
        "authoring.replaceQuestions": "refused",
        "embedSessions.create": "taken",
        "erasures.create": "taken",
        "surveyWebhook.put": "taken",
        "surveyWebhook.recover": "taken",
        // The rotation's body names the secret to sign with: a misspelt field must not go unnoticed.
        "surveyWebhook.rotateSecret": "refused",
        "workspaceWebhooks.put": "taken",
        "workspaceWebhooks.recover": "taken",
        "workspaceWebhooks.rotateSecret": "refused",
        "respondent.start": "refused",
        "respondent.save": "refused"
      })
    }))

  // Last: its random writes may close or trash any survey of the fixture (the authoring calls).
  it.effect("random requests to every operation answer no 5xx but a documented 503, and every error as documented", () =>
    Effect.gen(function*() {
      const served = yield* get("/openapi.json")
      expect(served.status).toBe(200)
      const document = bodyOf(Document, served)
      // The document's own schemas validate the answers: `$ref`s resolve against its components.
      const ajv = withFormats(new Ajv2020({ strict: false, allErrors: true }))
      const validatorOf = (schema: unknown) =>
        ajv.compile({ ...Schema.decodeUnknownSync(Schema.Object)(schema), components: document.components })

      const page = yield* call("GET", "/s/srv_all", { headers: { accept: "application/json" } })
      const respondentToken = bodyOf(Schema.Struct({ respondentToken: Schema.String }), page).respondentToken
      const operations = Object.entries(document.paths).flatMap(([path, item]) =>
        Object.entries(item).map(([method, operation]) => ({ path, method, operation }))
      )
      expect(operations.length).toBeGreaterThanOrEqual(17)
      const seen = new Map<string, Set<number>>()
      for (const [index, { method, operation, path }] of operations.entries()) {
        const samples = fc.sample(request(path, method, operation, respondentToken), { numRuns: 36, seed: 20261123 + index })
        for (const sample of samples) {
          const res = yield* call(asMethod(sample.method), sample.url, {
            headers: sample.headers,
            ...(sample.body === undefined ? {} : { body: sample.body })
          })
          const label = `${operation.operationId} ${sample.method} ${sample.url.slice(0, 200)} ` +
            `${JSON.stringify(sample.headers).slice(0, 300)} body=${(sample.body ?? "").slice(0, 100)} -> ` +
            `${res.status} ${res.text.slice(0, 300)}`
          seen.set(operation.operationId, (seen.get(operation.operationId) ?? new Set()).add(res.status))
          const declared = operation.responses[String(res.status)]
          if (res.status >= 500) expect(res.status, label).toBe(503)
          expect(res.text, label).not.toMatch(internals)
          if (res.status === 413 || res.status === 431) {
            // Bun's own answers, before the service sees the request: told in the document's description.
            expect(document.info.description, label).toContain(`${res.status} when`)
            expect(res.text, label).toBe("")
            continue
          }
          expect(declared, `status not declared: ${label}`).toBeDefined()
          if (declared?.content === undefined) {
            expect(res.text, label).toBe("")
            continue
          }
          const media = res.headers["content-type"]?.split(";")[0] ?? ""
          const schema = declared.content[media]?.schema
          expect(schema, `content type ${media} not declared: ${label}`).toBeDefined()
          if (media !== "application/json") continue
          const validate = validatorOf(schema)
          expect(validate(res.body), `${label}\n${JSON.stringify(validate.errors)}`).toBe(true)
        }
      }
      // The walk got past authorization into every operation.
      for (const { operation } of operations) {
        const statuses = [...(seen.get(operation.operationId) ?? [])]
        expect(statuses.some((s) => s !== 401 && s !== 403), `${operation.operationId}: ${statuses}`).toBe(true)
      }
    }), { timeout: 90_000 })
})
