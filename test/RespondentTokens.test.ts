import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Schema, TestClock } from "effect"
import { ResponseId } from "../src/Domain/Ids.js"
import { clientFor, outcomeOf } from "./support/ApiClient.js"
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
      const respondent = yield* clientFor(token)
      const { responseId } = yield* respondent.respondent.start({
        payload: { answers: [{ questionId: "q_short_text", values: ["hello"] }], finished: false },
        headers: {}
      })
      const path = { responseId: ResponseId.make(responseId) }
      const saved = yield* respondent.respondent.save({
        path,
        payload: { answers: [{ questionId: "q_short_text", values: ["again"] }], finished: true }
      })
      expect(saved).toBeDefined()
      // Another page's token may not change it; a forged or altered one is no token at all.
      const other = Effect.flatMap(clientFor(tokens[8] ?? ""), (api) =>
        api.respondent.save({ path, payload: { answers: [], finished: false } }))
      expect(yield* outcomeOf(other)).toBe("NotFound")
      const forged = token.replace(/\.[A-Za-z0-9_-]{43}$/, `.${"A".repeat(43)}`)
      expect(forged).not.toBe(token)
      const startWith = (token: string) =>
        outcomeOf(Effect.flatMap(clientFor(token), (api) => api.respondent.start({ payload: { answers: [], finished: false }, headers: {} })))
      expect(yield* startWith(forged)).toBe("Unauthorized")

      // 24 hours after its load the token is refused, like a stored one.
      yield* TestClock.adjust("24 hours")
      expect(yield* startWith(tokens[9] ?? "")).toBe("Unauthorized")
    }))
})
