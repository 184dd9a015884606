import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import type { Position } from "../src/Domain/Cursor.js"
import type { ResponseStatusFilter } from "../src/Domain/Response.js"
import { pageStatement } from "../src/Responses/ResponseRepo.js"
import { TestDatabase } from "./support/TestServer.js"

/**
 * The list queries must walk an index in their sort order: no temporary B-tree for ORDER BY
 * and no full scan, so page 10,000 costs what page 1 costs.
 */
const plan = (query: string, params: ReadonlyArray<unknown>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql.unsafe<{ detail: string }>(`EXPLAIN QUERY PLAN ${query}`, params)
    return rows.map((r) => r.detail).join("\n")
  })

const expectIndexed = (detail: string, index: string) => {
  // The seek itself carries the keyset bound when there is one.
  if (detail.includes("id)")) expect(detail).toMatch(/\(\w+_at,id\)[<>]\(\?,\?\)/)
  expect(detail).toMatch(new RegExp(`USING (COVERING )?INDEX ${index}`))
  expect(detail).not.toContain("TEMP B-TREE")
  expect(detail).not.toMatch(/SCAN (surveys|responses)(?! USING)/)
}

layer(TestDatabase())("query plans", (it) => {
  it.effect("surveys list: workspace filter and activity order from one index", () =>
    Effect.gen(function*() {
      const base = `SELECT * FROM surveys WHERE workspace_id = ? AND trashed = 0`
      expectIndexed(yield* plan(`${base} ORDER BY updated_at DESC, id DESC LIMIT 26`, ["ws"]), "surveys_by_activity")
      expectIndexed(
        yield* plan(`${base} AND (updated_at, id) < (?, ?) ORDER BY updated_at DESC, id DESC LIMIT 26`, ["ws", "t", "i"]),
        "surveys_by_activity"
      )
    }))

  it.effect("responses list: one range of the clustered table, or of the status index, in keyset order", () =>
    Effect.gen(function*() {
      const statement = (
        status: ResponseStatusFilter,
        after: Option.Option<Position>,
        createdAfter: string | undefined
      ) => pageStatement({ surveyId: "s", status, order: "createdAt", from: createdAfter, after, limit: 101 })
      const explain = (s: ReturnType<typeof pageStatement>) => plan(s.text, s.params)
      const cursor = Option.some({ key: "t", id: "i" })
      // The survey's answer_layout: one primary-key lookup, once per statement.
      const layout = /SEARCH surveys USING (COVERING )?INDEX sqlite_autoindex_surveys_1 \(id=\?\)/
      const first = yield* explain(statement("all", Option.none(), undefined))
      expect(first).toMatch(/SEARCH responses USING PRIMARY KEY \(survey_id=\?\)/)
      expect(first).toMatch(layout)
      for (const detail of [first, yield* explain(statement("all", cursor, undefined))]) {
        expect(detail).not.toContain("TEMP B-TREE")
        expect(detail).not.toMatch(/SCAN responses/)
      }
      expect(yield* explain(statement("all", cursor, undefined))).toMatch(
        /SEARCH responses USING PRIMARY KEY \(survey_id=\? AND \(created_at,id\)>\(\?,\?\)\)/
      )
      const since = yield* explain(statement("all", Option.none(), "t"))
      expect(since).toMatch(/SEARCH responses USING PRIMARY KEY \(survey_id=\? AND created_at>\?\)/)
      expect(since).not.toContain("TEMP B-TREE")
      // With a status filter the planner may walk the status index or the primary key's range with
      // the filter (it picks by its estimates); either walk is in keyset order with the seek on the cursor.
      for (const status of ["completed", "incomplete"] as const) {
        for (const detail of [
          yield* explain(statement(status, cursor, undefined)),
          yield* explain(statement(status, Option.none(), "t"))
        ]) {
          expect(detail).toMatch(/SEARCH responses USING (PRIMARY KEY|INDEX responses_by_status) \(survey_id=\?/)
          expect(detail).toMatch(/(\(created_at,id\)>\(\?,\?\)|created_at>\?)\)/)
          expect(detail).not.toContain("TEMP B-TREE")
          expect(detail).not.toMatch(/SCAN responses/)
        }
      }
    }))

  it.effect("responses by change: updatedAfter, status and the updatedAt keyset order from an index", () =>
    Effect.gen(function*() {
      const select = `SELECT * FROM responses WHERE survey_id = ?`
      const order = `ORDER BY updated_at, id LIMIT 101`
      expectIndexed(yield* plan(`${select} AND updated_at >= ? ${order}`, ["s", "t"]), "responses_by_updated")
      expectIndexed(
        yield* plan(`${select} AND (updated_at, id) > (?, ?) ${order}`, ["s", "t", "i"]),
        "responses_by_updated"
      )
      expectIndexed(
        yield* plan(`${select} AND completed = ? AND updated_at >= ? ${order}`, ["s", 1, "t"]),
        "responses_by_status_updated"
      )
      expectIndexed(
        yield* plan(`${select} AND completed = ? AND (updated_at, id) > (?, ?) ${order}`, ["s", 0, "t", "i"]),
        "responses_by_status_updated"
      )
      // Each save reads the survey's latest updatedAt (src/Responses/ChangeClock.ts): one seek.
      const latest = yield* plan(`SELECT MAX(updated_at) FROM responses WHERE survey_id = ?`, ["s"])
      expect(latest).toMatch(/SEARCH responses USING COVERING INDEX responses_by(_status)?_updated/)
    }))

  it.effect("answers of a page come from the primary key", () =>
    Effect.gen(function*() {
      const detail = yield* plan(
        `SELECT a.value FROM answers a LEFT JOIN questions q ON q.id = a.question_id AND q.survey_id = ?
         WHERE a.response_id IN (?, ?, ?)`,
        ["s", "a", "b", "c"]
      )
      expect(detail).toMatch(/SEARCH a USING PRIMARY KEY \(response_id=\?\)/)
      expect(detail).not.toContain("TEMP B-TREE")
    }))
})
