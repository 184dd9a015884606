import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Schema, TestClock } from "effect"
import { respondentFixture } from "./support/RespondentFixtures.js"
import { Count } from "./support/StoredRows.js"
import { bodyOf, call, decodeAs, TestServer } from "./support/TestServer.js"

const PageBody = Schema.Struct({ respondentToken: Schema.String })

const count = (statement: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(sql.unsafe(statement).pipe(Effect.orDie), (rows) => decodeAs(Schema.Array(Count), rows)[0]?.n ?? -1))

layer(TestServer(respondentFixture))("survey page loads", (it) => {
  it.effect("store nothing: a page's respondent token costs no row until it saves, and then saves like any", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      // Every table of the service's database but the request quota's counters (on SQLite they are in the quota file).
      const tables = yield* sql.onDialectOrElse({
        pg: () => sql<{ name: string }>`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public'`,
        orElse: () => sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`
      }).pipe(Effect.orDie)
      const counted = tables.map((t) => t.name).filter((name) => name !== "usage_daily" && name !== "usage_burst")
      expect(counted).toContain("respondent_tokens")
      const rows = Effect.forEach(counted, (name) => count(`SELECT count(*) AS n FROM ${name}`))
      const before = yield* rows
      const tokens: Array<string> = []
      for (let i = 0; i < 20; i++) {
        const res = yield* call("GET", "/s/srv_short", { headers: { accept: "application/json" } })
        expect(res.status).toBe(200)
        tokens.push(bodyOf(PageBody, res).respondentToken)
      }
      expect(new Set(tokens).size).toBe(20)
      expect(yield* rows).toEqual(before)
      expect(yield* count("SELECT count(*) AS n FROM respondent_tokens")).toBe(0)

      const token = tokens[7] ?? ""
      const started = yield* call("POST", "/respond/v1/responses", {
        token,
        body: JSON.stringify({ answers: [{ questionId: "q_short_text", values: ["hello"] }], finished: false })
      })
      expect(started.status).toBe(201)
      const { responseId } = bodyOf(Schema.Struct({ responseId: Schema.String }), started)
      const saved = yield* call("PATCH", `/respond/v1/responses/${responseId}`, {
        token,
        body: JSON.stringify({ answers: [{ questionId: "q_short_text", values: ["again"] }], finished: true })
      })
      expect(saved.status).toBe(200)
      // Another page's token may not change it; a forged or altered one is no token at all.
      const other = yield* call("PATCH", `/respond/v1/responses/${responseId}`, {
        token: tokens[8] ?? "",
        body: JSON.stringify({ answers: [], finished: false })
      })
      expect(other.status).toBe(404)
      const forged = token.replace(/\.[A-Za-z0-9_-]{43}$/, `.${"A".repeat(43)}`)
      expect(forged).not.toBe(token)
      const refused = yield* call("POST", "/respond/v1/responses", { token: forged, body: JSON.stringify({ answers: [] }) })
      expect(refused.status).toBe(401)

      // 24 hours after its load the token is refused, like a stored one.
      yield* TestClock.adjust("24 hours")
      const late = yield* call("POST", "/respond/v1/responses", { token: tokens[9] ?? "", body: JSON.stringify({ answers: [] }) })
      expect(late.status).toBe(401)
    }))
})
