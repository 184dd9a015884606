import { SqlClient } from "@effect/sql"
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Idempotency, storedKey } from "../src/Http/Idempotency.js"
import { SurveyId } from "../src/Domain/Ids.js"
import { EmbedSessionRequest } from "../src/Embeds/Api.js"
import { clientFor } from "./support/ApiClient.js"
import { TOKENS } from "./support/Fixtures.js"
import { respondentFixture } from "./support/RespondentFixtures.js"
import { bodyOf, call, decodeAs, ErrorCode, get, TestServer } from "./support/TestServer.js"
import { advance } from "./support/Advance.js"
import { everyRow } from "./support/StoredRows.js"
import { migrateUpTo, withBareDatabase } from "./support/Migrations.js"

const json = (value: unknown) => JSON.stringify(value)
const Saved = Schema.Struct({ responseId: Schema.String })
const PageOpen = Schema.Struct({ respondentToken: Schema.String })
const EmbedUrl = Schema.Struct({ embedUrl: Schema.String })
const Issues = Schema.Struct({ issues: Schema.Array(Schema.Struct({ path: Schema.String })) })

const embed = (key: string | undefined, externalUserId: string, surveyId = "srv_short", token: string = TOKENS.editor) =>
  call("POST", `/api/v1/surveys/${surveyId}/embed-sessions`, {
    token,
    body: json({ externalUserId }),
    ...(key === undefined ? {} : { headers: { "idempotency-key": key } })
  })

const Counts = Schema.Struct({ sessions: Schema.Number, responses: Schema.Number, keys: Schema.Number })

const counts = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`
    SELECT (SELECT count(*) FROM embed_sessions) AS sessions,
           (SELECT count(*) FROM responses) AS responses,
           (SELECT count(*) FROM idempotency_keys) AS keys`.pipe(Effect.orDie)
  const [row] = decodeAs(Schema.Tuple(Counts), rows)
  return row
})

const respondentToken = (surveyId: string) =>
  Effect.map(call("GET", `/s/${surveyId}`, { headers: { accept: "application/json" } }), (res) =>
    bodyOf(PageOpen, res).respondentToken)

const start = (token: string, key: string | undefined, text: string) =>
  call("POST", "/respond/v1/responses", {
    token,
    body: json({ answers: [{ questionId: "q_short_text", values: [text] }] }),
    ...(key === undefined ? {} : { headers: { "idempotency-key": key } })
  })

layer(TestServer(respondentFixture))("idempotent creation", (it) => {
  it.effect("an embed session repeated with its key answers the first answer again and creates nothing", () =>
    Effect.gen(function*() {
      const before = yield* counts
      const first = yield* embed("retry-1", "person-a")
      expect(first.status).toBe(201)
      expect(first.headers["idempotent-replayed"]).toBeUndefined()
      const again = yield* embed("retry-1", "person-a")
      expect(again.status).toBe(201)
      expect(again.text).toBe(first.text)
      expect(again.headers["idempotent-replayed"]).toBe("true")
      expect(again.headers["content-type"]).toMatch(/application\/json/)
      expect((yield* counts).sessions).toBe(before.sessions + 1)

      // Another key, no key, another workspace: each creates.
      expect((yield* embed("retry-2", "person-a")).text).not.toBe(first.text)
      expect((yield* embed(undefined, "person-a")).status).toBe(201)
      const elsewhere = yield* embed("retry-1", "person-a", "srv_other", TOKENS.other)
      expect(elsewhere.status).toBe(201)
      expect(elsewhere.headers["idempotent-replayed"]).toBeUndefined()
      expect((yield* counts).sessions).toBe(before.sessions + 4)
    }))

  it.effect("the same key with another body, an empty, over-long or non-ASCII key: 400 on Idempotency-Key, nothing changed", () =>
    Effect.gen(function*() {
      expect((yield* embed("reuse", "person-b")).status).toBe(201)
      const before = yield* counts
      for (
        const [key, body] of [
          ["reuse", "person-other"],
          ["", "person-b"],
          ["k".repeat(256), "person-b"],
          ["tab\there", "person-b"]
        ] as const
      ) {
        const res = yield* embed(key, body)
        expect([key.slice(0, 10), res.status]).toEqual([key.slice(0, 10), 400])
        expect(bodyOf(ErrorCode, res).code).toBe("invalid_request")
        expect(bodyOf(Issues, res).issues[0]?.path).toBe("Idempotency-Key")
      }
      // Another survey is another request too.
      const otherSurvey = yield* embed("reuse", "person-b", "srv_all")
      expect(bodyOf(Issues, otherSurvey).issues[0]?.path).toBe("Idempotency-Key")
      expect(yield* counts).toEqual(before)
      expect((yield* embed("k".repeat(255), "person-b")).status).toBe(201)
    }))

  it.effect("a failed creation stores nothing: the retry runs again", () =>
    Effect.gen(function*() {
      const refused = yield* embed("draft-1", "person-c", "srv_draft")
      expect(refused.status).toBe(400)
      const before = yield* counts
      const again = yield* embed("draft-1", "person-c", "srv_draft")
      expect(again.status).toBe(400)
      expect(again.headers["idempotent-replayed"]).toBeUndefined()
      expect(yield* counts).toEqual(before)
    }))

  it.effect("two concurrent requests with one key create one session", () =>
    Effect.gen(function*() {
      const before = yield* counts
      const answers = yield* Effect.all(
        Array.from({ length: 6 }, () => embed("race-1", "person-d")),
        { concurrency: "unbounded" }
      )
      expect(answers.map((a) => a.status)).toEqual([201, 201, 201, 201, 201, 201])
      expect(new Set(answers.map((a) => a.text)).size).toBe(1)
      expect(answers.filter((a) => a.headers["idempotent-replayed"] === "true")).toHaveLength(5)
      expect((yield* counts).sessions).toBe(before.sessions + 1)
    }))

  it.effect("answers are kept 24 hours, then the key is free again and the periodic job prunes them", () =>
    Effect.gen(function*() {
      const first = yield* embed("day-1", "person-e")
      yield* advance("23 hours")
      expect((yield* embed("day-1", "person-e")).headers["idempotent-replayed"]).toBe("true")
      yield* advance("1 hour")
      const later = yield* embed("day-1", "person-other")
      expect(later.status).toBe(201)
      expect(later.headers["idempotent-replayed"]).toBeUndefined()
      expect(later.text).not.toBe(first.text)

      yield* advance("25 hours")
      const idempotency = yield* Idempotency
      expect(yield* idempotency.prune()).toBeGreaterThan(0)
      expect((yield* counts).keys).toBe(0)
    }))

  it.effect("the respondent API: one response per key and token; another token's key is its own", () =>
    Effect.gen(function*() {
      const token = yield* respondentToken("srv_short")
      const before = yield* counts
      const first = yield* start(token, "save-1", "hello")
      expect(first.status).toBe(201)
      const again = yield* start(token, "save-1", "hello")
      expect(again.status).toBe(201)
      expect(again.headers["idempotent-replayed"]).toBe("true")
      expect(bodyOf(Saved, again).responseId).toBe(bodyOf(Saved, first).responseId)
      expect((yield* counts).responses).toBe(before.responses + 1)

      const changed = yield* start(token, "save-1", "hello again")
      expect(changed.status).toBe(400)
      expect(bodyOf(Issues, changed).issues[0]?.path).toBe("Idempotency-Key")
      const bad = yield* start(token, "", "hello")
      expect(bodyOf(Issues, bad).issues[0]?.path).toBe("Idempotency-Key")

      const otherToken = yield* respondentToken("srv_short")
      const other = yield* start(otherToken, "save-1", "hello")
      expect(other.status).toBe(201)
      expect(bodyOf(Saved, other).responseId).not.toBe(bodyOf(Saved, first).responseId)
      expect((yield* counts).responses).toBe(before.responses + 2)
    }))

  it.effect("erasing a person removes the remembered answers of their embed sessions", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const api = yield* clientFor(TOKENS.editor)
      for (const [key, externalUserId] of [["erase-1", "person-f"], ["erase-2", "person-g"]] as const) {
        yield* api.embedSessions.create({
          path: { id: SurveyId.make("srv_short") },
          payload: new EmbedSessionRequest({ externalUserId }),
          headers: { "idempotency-key": key }
        })
      }
      const [first, second] = [storedKey("erase-1"), storedKey("erase-2")]
      const keys = sql`SELECT idempotency_key AS key FROM idempotency_keys
        WHERE idempotency_key IN (${first}, ${second})`.pipe(
        Effect.orDie,
        Effect.map((rows) => decodeAs(Schema.Array(Schema.Struct({ key: Schema.String })), rows).map((r) => r.key).sort())
      )
      expect(yield* keys).toEqual([first, second].sort())
      const erased = yield* api.erasures.create({ payload: { externalUserId: "person-f" } })
      expect(erased.externalUserId).toBe("person-f")
      expect(yield* keys).toEqual([second])
    }))

  it.effect("neither the embed token nor the key is stored in clear, and the replay still answers the same", () =>
    Effect.gen(function*() {
      const key = "secret-retry-7f3a"
      const first = yield* embed(key, "person-h")
      expect(first.status).toBe(201)
      const token = new URL(bodyOf(EmbedUrl, first).embedUrl).pathname.split("/").pop() ?? ""
      expect(token).toHaveLength(43)
      const stored = yield* everyRow
      expect(stored.tables).toContain("idempotency_keys")
      expect(stored.rows.filter((r) => r.row.includes(token) || r.row.includes(key))).toEqual([])

      const again = yield* embed(key, "person-h")
      expect(again.status).toBe(201)
      expect(again.headers["idempotent-replayed"]).toBe("true")
      expect(again.text).toBe(first.text)
    }))

  it.effect("the OpenAPI document declares the header and the replay marker", () =>
    Effect.gen(function*() {
      const doc = yield* get("/openapi.json")
      const spec = bodyOf(
        Schema.Struct({
          paths: Schema.Record({
            key: Schema.String,
            value: Schema.Record({ key: Schema.String, value: Schema.Unknown })
          })
        }),
        doc
      )
      const post = JSON.stringify(spec.paths["/api/v1/surveys/{id}/embed-sessions"]?.["post"])
      expect(post).toContain("\"name\":\"idempotency-key\"")
      expect(post).toContain("Idempotent-Replayed")
      expect(JSON.stringify(spec.paths["/api/v1/erasures"])).toContain("deletedResponses")
      expect(JSON.stringify(spec.paths["/api/v1/surveys/{id}/responses/{responseId}"]?.["delete"])).toContain("204")
      expect(JSON.stringify(spec.paths["/api/v1/surveys/{id}/responses"]?.["get"])).toContain("updatedAfter")
    }))
})

describe("migration 0016", () => {
  it.scoped("keeps respondents' remembered answers under their key's hash and drops the workspace's clear ones", () =>
    withBareDatabase(
      "survey-0016-",
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* migrateUpTo("0015_~")
        yield* sql`INSERT INTO idempotency_keys (scope, idempotency_key, request_hash, status, body, created_at) VALUES
          ('respondent:h1', 'save-1', 'rh', 201, '{"responseId":"rsp_1"}', 1),
          ('workspace:ws', 'embed-1', 'rh', 201, '{"embedUrl":"http://x/embed/secret"}', 1)`
        yield* migrateUpTo("9999")
        const rows = yield* sql`SELECT scope, idempotency_key, body FROM idempotency_keys`.values
        expect(rows).toEqual([["respondent:h1", storedKey("save-1"), "{\"responseId\":\"rsp_1\"}"]])
      })
    ).pipe(Effect.orDie))
})
