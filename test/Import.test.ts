import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Cause, Effect, Exit, Schema } from "effect"
import { importFixtureInput } from "../src/Fixtures/Import.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { ResponseId, SurveyId } from "../src/Domain/Ids.js"
import { clientFor } from "./support/ApiClient.js"
import { decodeAs, TestServer } from "./support/TestServer.js"
import { Count } from "./support/StoredRows.js"

const main = { path: { id: SurveyId.make("srv_main") } }

const TokenHash = Schema.Struct({ tokenHash: Schema.String })

layer(TestServer(baseFixture))("fixture import", (it) => {
  it.effect("is idempotent by id and keeps tokens hashed", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const count = (table: string) =>
        Effect.map(sql.unsafe(`SELECT COUNT(*) AS n FROM ${table}`), (rows) => decodeAs(Schema.Array(Count), rows)[0]?.n)
      const before = [yield* count("surveys"), yield* count("responses"), yield* count("answers"), yield* count("api_keys")]
      yield* importFixtureInput(baseFixture)
      const after = [yield* count("surveys"), yield* count("responses"), yield* count("answers"), yield* count("api_keys")]
      expect(after).toEqual(before)
      const hashes = decodeAs(Schema.Array(TokenHash), yield* sql`SELECT token_hash FROM api_keys`)
      expect(hashes.every((h) => /^[0-9a-f]{64}$/.test(h.tokenHash))).toBe(true)
      const dump = JSON.stringify(yield* sql`SELECT * FROM api_keys`)
      expect(dump).not.toContain(TOKENS.editor)
      const api = yield* clientFor(TOKENS.editor)
      const survey = yield* api.surveys.get(main)
      expect(survey).toMatchObject({ responseCount: 3, questionCount: 4 })
    }))

  it.effect("a re-import replaces a response's answers and updates the survey", () =>
    Effect.gen(function*() {
      const [mainSurvey] = baseFixture.surveys ?? []
      if (mainSurvey === undefined) return yield* Effect.dieMessage("the base fixture has no survey")
      yield* importFixtureInput({
        surveys: [{ ...mainSurvey, title: "Main, renamed" }],
        responses: [{
          id: "rsp_2",
          surveyId: "srv_main",
          createdAt: "2026-01-11T00:00:00.000Z",
          completedAt: "2026-01-11T00:09:00.000Z",
          answers: [{ questionId: "q_text", values: ["later"] }]
        }]
      })
      const api = yield* clientFor(TOKENS.editor)
      expect(yield* api.surveys.get(main)).toMatchObject({ title: "Main, renamed" })
      expect(yield* api.responses.get({ path: { ...main.path, responseId: ResponseId.make("rsp_2") } })).toMatchObject({
        completed: true,
        answers: [{ fieldId: "q_text", value: "later", values: ["later"] }]
      })
    }))

  it.effect("a malformed fixture is refused whole and changes nothing", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const before = yield* sql`SELECT COUNT(*) AS n FROM responses`
      const bad = yield* Effect.exit(importFixtureInput({ responses: [{ id: "rsp_x", surveyId: "srv_main" }] }))
      expect(Exit.isFailure(bad)).toBe(true)
      // A reference to a survey that does not exist fails in the transaction and rolls back.
      const dangling = yield* Effect.exit(importFixtureInput({
        responses: [
          { id: "rsp_ok", surveyId: "srv_main", createdAt: "2026-01-20T00:00:00Z" },
          { id: "rsp_dangling", surveyId: "srv_nowhere", createdAt: "2026-01-20T00:00:00Z" }
        ]
      }))
      expect(Exit.isFailure(dangling)).toBe(true)
      // One response id twice would be counted twice on its survey: refused, naming the second.
      const twice = yield* Effect.exit(importFixtureInput({
        responses: [
          { id: "rsp_twice", surveyId: "srv_main", createdAt: "2026-01-20T00:00:00Z" },
          { id: "rsp_twice", surveyId: "srv_main", createdAt: "2026-01-21T00:00:00Z" }
        ]
      }))
      expect(Exit.isFailure(twice)).toBe(true)
      expect(String(Exit.isFailure(twice) ? Cause.squash(twice.cause) : "")).toContain("responses.1.id")
      // Texts and positions beyond the bounds the API declares for them are refused, each named.
      const [mainSurvey] = baseFixture.surveys ?? []
      if (mainSurvey === undefined) return yield* Effect.dieMessage("the base fixture has no survey")
      const oversized = yield* Effect.exit(importFixtureInput({
        surveys: [{
          ...mainSurvey,
          title: "t".repeat(501),
          questions: (mainSurvey.questions ?? []).map((q, i) => i === 0 ? { ...q, order: 2 ** 31 } : q)
        }],
        responses: [{
          id: "rsp_long",
          surveyId: "srv_main",
          createdAt: "2026-01-20T00:00:00Z",
          externalUserId: "u".repeat(257),
          answers: [
            { questionId: "q_text", values: ["x".repeat(10_001)] },
            { questionId: "q_choice", values: Array.from({ length: 201 }, (_, i) => `v${i}`) }
          ]
        }]
      }))
      const refusal = String(Exit.isFailure(oversized) ? Cause.squash(oversized.cause) : "")
      expect(refusal).toContain("surveys.0.title: at most 500 characters")
      expect(refusal).toContain("surveys.0.questions.0.order:")
      expect(refusal).toContain("responses.0.externalUserId: at most 256 characters")
      expect(refusal).toContain("responses.0.answers.0.values.0: at most 10,000 characters")
      expect(refusal).toContain("responses.0.answers.1.values:")
      expect(yield* sql`SELECT COUNT(*) AS n FROM responses`).toEqual(before)
    }))
})
