import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
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

  it.effect("responses list: survey, status and createdAfter filters with keyset order from an index", () =>
    Effect.gen(function*() {
      const select = `SELECT * FROM responses WHERE survey_id = ?`
      const order = `ORDER BY created_at, id LIMIT 101`
      expectIndexed(yield* plan(`${select} ${order}`, ["s"]), "responses_by_created")
      expectIndexed(
        yield* plan(`${select} AND (created_at, id) > (?, ?) ${order}`, ["s", "t", "i"]),
        "responses_by_created"
      )
      expectIndexed(yield* plan(`${select} AND created_at >= ? ${order}`, ["s", "t"]), "responses_by_created")
      expectIndexed(
        yield* plan(`${select} AND completed = ? AND (created_at, id) > (?, ?) ${order}`, ["s", 1, "t", "i"]),
        "responses_by_status"
      )
      expectIndexed(
        yield* plan(`${select} AND completed = ? AND created_at >= ? ${order}`, ["s", 0, "t"]),
        "responses_by_status"
      )
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
