import { SqlClient } from "@effect/sql"
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { importFixtureInput } from "../src/Fixtures/Import.js"
import { ResponseId, SurveyId } from "../src/Domain/Ids.js"
import { SurveyResponse } from "../src/Domain/Response.js"
import { ResponsePage } from "../src/Responses/Api.js"
import { refreshAnswerDocuments } from "../src/Responses/AnswerDocumentRepo.js"
import { clientFor } from "./support/ApiClient.js"
import { storedRendering } from "./support/AnswerDocuments.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { migrateUpTo, withBareDatabase } from "./support/Migrations.js"
import { get, testDatabase, TestServer } from "./support/TestServer.js"

/**
 * The responses list answers each response's stored rendering of its answers while it is current
 * (src/Responses/AnswerDocumentRepo.ts). These tests guard that shortcut: the rendering equals the
 * answers assembled from their rows, a change of answers or questions by any writer is never
 * answered from a stale rendering, and the list's bytes stay the schema's encoding either way.
 */

const schemaEncoded = (text: string) =>
  JSON.stringify(Schema.encodeSync(ResponsePage)(Schema.decodeUnknownSync(ResponsePage)(JSON.parse(text))))

/** A response's answers as GET /responses/{id} assembles them from the answer rows, in the schema's encoding as JSON text. */
const assembledAnswers = (responseId: string) =>
  Effect.flatMap(clientFor(TOKENS.editor), (api) =>
    api.responses.get({ path: { id: SurveyId.make("srv_main"), responseId: ResponseId.make(responseId) } })).pipe(
      Effect.map((response) => JSON.stringify(Schema.encodeSync(SurveyResponse)(response).answers))
    )

// Raw: the list's bytes themselves are checked to be the schema's encoding.
const list = Effect.map(get("/api/v1/surveys/srv_main/responses", TOKENS.editor), (res) => {
  expect(res.status).toBe(200)
  expect(res.text).toBe(schemaEncoded(res.text))
  return res
})

const answersInList = (text: string, responseId: string) =>
  JSON.stringify(Schema.decodeUnknownSync(ResponsePage)(JSON.parse(text)).data.find((r) => r.id === responseId)?.answers)

const exec = (text: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(text)).pipe(Effect.orDie)

layer(TestServer(baseFixture))("stored renderings of answers", (it) => {
  it.effect("the importer stores a current rendering of every response, equal to its assembled answers", () =>
    Effect.gen(function*() {
      for (const id of ["rsp_1", "rsp_2", "rsp_3"]) {
        const stored = yield* storedRendering(id)
        expect(stored.current).toBe(1)
        expect(stored.answersJson).toBe(yield* assembledAnswers(id))
      }
      yield* list
    }))

  it.effect("a re-import that replaces a response's answers renders it again in the same transaction", () =>
    Effect.gen(function*() {
      yield* importFixtureInput({
        responses: [{
          id: "rsp_3",
          surveyId: "srv_main",
          createdAt: "2026-01-12T00:00:00.000Z",
          completedAt: "2026-01-12T00:01:00.000Z",
          answers: [{ questionId: "q_num", values: ["7"] }, { questionId: "q_text", values: ["again"] }]
        }]
      }).pipe(Effect.orDie)
      const stored = yield* storedRendering("rsp_3")
      expect(stored.current).toBe(1)
      expect(stored.answersJson).toBe(yield* assembledAnswers("rsp_3"))
      expect(answersInList((yield* list).text, "rsp_3")).toBe(
        `[{"fieldId":"q_text","type":"textarea","value":"again","values":["again"]},` +
          `{"fieldId":"q_num","type":"number","value":"7","values":["7"]}]`
      )
    }))

  it.effect("an answer changed by hand clears its response's rendering; the list shows the new answer", () =>
    Effect.gen(function*() {
      yield* exec(`UPDATE answers SET value = 'changed', "values" = '["changed"]'
        WHERE response_id = 'rsp_1' AND question_id = 'q_text'`)
      expect((yield* storedRendering("rsp_1")).answersJson).toBeNull()
      expect((yield* storedRendering("rsp_2")).current).toBe(1)
      const res = yield* list
      expect(answersInList(res.text, "rsp_1")).toContain("\"changed\"")
      expect(answersInList(res.text, "rsp_1")).toBe(yield* assembledAnswers("rsp_1"))

      yield* exec(`DELETE FROM answers WHERE response_id = 'rsp_2'`)
      expect((yield* storedRendering("rsp_2")).answersJson).toBeNull()
      expect(answersInList((yield* list).text, "rsp_2")).toBe("[]")
    }))

  it.effect("a question deleted or moved by hand makes every rendering of its survey stale until rendered again", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* refreshAnswerDocuments(sql, ["rsp_1", "rsp_2", "rsp_3"]).pipe(Effect.orDie)
      const before = (yield* list).text

      // A label change does not show in answers: the renderings stay current.
      yield* exec(`UPDATE questions SET label = 'Renamed' WHERE id = 'q_num'`)
      expect((yield* storedRendering("rsp_1")).current).toBe(1)
      // Re-importing a question unchanged does not move the layout either.
      yield* exec(`UPDATE questions SET position = position WHERE id = 'q_num'`)
      expect((yield* storedRendering("rsp_1")).current).toBe(1)

      yield* exec(`UPDATE questions SET deleted = 1 WHERE id = 'q_num'`)
      expect((yield* storedRendering("rsp_1")).current).toBe(0)
      const afterDelete = (yield* list).text
      expect(afterDelete).not.toBe(before)
      const answers = answersInList(afterDelete, "rsp_1")
      expect(answers).toBe(yield* assembledAnswers("rsp_1"))
      expect(answers).toContain(`{"fieldId":null,"type":null,"value":"42","values":["42"]}`)

      yield* exec(`UPDATE questions SET position = 0 WHERE id = 'q_rank'`)
      const moved = answersInList((yield* list).text, "rsp_1")
      expect(moved.startsWith(`[{"fieldId":"q_rank"`)).toBe(true)
      expect(moved).toBe(yield* assembledAnswers("rsp_1"))

      // Rendered again against the new layout: current, and the same bytes as assembled.
      const assembled = (yield* list).text
      yield* refreshAnswerDocuments(sql, ["rsp_1", "rsp_2", "rsp_3"]).pipe(Effect.orDie)
      expect((yield* storedRendering("rsp_1")).current).toBe(1)
      expect((yield* list).text).toBe(assembled)

      yield* exec(`INSERT INTO questions (id, survey_id, type, label, position) VALUES ('q_new', 'srv_main', 'number', 'New', 9)`)
      expect((yield* storedRendering("rsp_1")).current).toBe(0)
    }))
})

describe("migration 0009", () => {
  it.scoped("rebuilds responses clustered, keeps every answer and token link, and renders the stored responses", () =>
    withBareDatabase(
      "survey-0009-",
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* migrateUpTo("0008_~")
        const run = (statements: string) =>
          Effect.forEach(statements.split(";"), (statement) => sql.unsafe(statement), { discard: true })
        yield* run(`INSERT INTO accounts (id, plan_id) VALUES ('acc', 'pro');
          INSERT INTO workspaces (id, owner_account_id) VALUES ('ws', 'acc');
          INSERT INTO surveys (id, workspace_id, title, status, created_at, updated_at)
            VALUES ('srv', 'ws', 'S', 'published', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z');
          INSERT INTO questions (id, survey_id, type, label, position) VALUES
            ('q_a', 'srv', 'textarea', 'A', 2), ('q_b', 'srv', 'checkbox', 'B', 1);
          INSERT INTO responses (id, survey_id, completed, created_at, updated_at) VALUES
            ('rsp_2', 'srv', 0, '2026-01-02T00:00:00.000Z', '2026-01-02T00:00:00.000Z'),
            ('rsp_1', 'srv', 0, '2026-01-03T00:00:00.000Z', '2026-01-03T00:00:00.000Z');
          INSERT INTO answers (response_id, question_id, value, "values") VALUES
            ('rsp_1', 'q_a', 'hi', '["hi"]'), ('rsp_1', 'q_b', '["x","y"]', '["x","y"]'), ('rsp_2', 'q_gone', 'z', '["z"]')`)
        yield* run(`INSERT INTO embed_sessions (id, token_hash, survey_id, workspace_id, external_user_id, created_at, expires_at)
            VALUES ('emb', 'h0', 'srv', 'ws', 'u', 't', 't');
          INSERT INTO respondent_tokens (token_hash, survey_id, single_response, created_at, expires_at)
            VALUES ('h1', 'srv', 0, 't', 't');
          INSERT INTO respondent_responses (response_id, token_hash) VALUES ('rsp_1', 'h1')`)

        yield* migrateUpTo("9999")
        const answers = yield* sql`SELECT response_id, question_id FROM answers ORDER BY response_id, question_id`
        expect(answers.length).toBe(3)
        expect((yield* sql`SELECT response_id FROM respondent_responses`).length).toBe(1)
        // SQLite checks the rebuilt table's foreign keys only when asked; PostgreSQL checked each row.
        if (testDatabase === "sqlite") expect(yield* sql`PRAGMA foreign_key_check`).toEqual([])
        const rows = yield* sql`SELECT id, answers_json FROM responses ORDER BY survey_id, created_at, id`.values
        expect(rows).toEqual([
          ["rsp_2", `[{"fieldId":null,"type":null,"value":"z","values":["z"]}]`],
          ["rsp_1", `[{"fieldId":"q_b","type":"checkbox","value":"[\\"x\\",\\"y\\"]","values":["x","y"]},` +
            `{"fieldId":"q_a","type":"textarea","value":"hi","values":["hi"]}]`]
        ])
        // Deleting a response still removes its answers and its token link.
        yield* sql`DELETE FROM responses WHERE id = 'rsp_1'`
        expect((yield* sql`SELECT response_id FROM answers`).length).toBe(1)
        expect((yield* sql`SELECT response_id FROM respondent_responses`).length).toBe(0)
      })
    ).pipe(Effect.orDie))
})
