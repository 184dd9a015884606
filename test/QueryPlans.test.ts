import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Option, Schema } from "effect"
import type { Position } from "../src/Domain/Cursor.js"
import type { ResponseStatusFilter } from "../src/Domain/Response.js"
import { answersOfResponses } from "../src/Responses/AnswerSql.js"
import { stampText } from "../src/Responses/ChangeClockRepo.js"
import { byIdStatement, pageStatement, withAnswers } from "../src/Responses/ResponseRepo.js"
import { toNumbered } from "../src/Sql/Dialect.js"
import { decodeAs, TestDatabase, testDatabase } from "./support/TestServer.js"
import { SurveyId } from "../src/Domain/Ids.js"

/**
 * The list queries must walk an index in their sort order: no temporary B-tree for ORDER BY
 * and no full scan, so page 10,000 costs what page 1 costs.
 */
const PlanStep = Schema.Struct({ detail: Schema.String })

const plan = (query: string, params: ReadonlyArray<unknown>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = decodeAs(Schema.Array(PlanStep), yield* sql.unsafe(`EXPLAIN QUERY PLAN ${query}`, params))
    return rows.map((r) => r.detail).join("\n")
  })

const expectIndexed = (detail: string, index: string) => {
  // The seek itself carries the keyset bound when there is one.
  if (detail.includes("id)")) expect(detail).toMatch(/\(\w+_at,id\)[<>]\(\?,\?\)/)
  expect(detail).toMatch(new RegExp(`USING (COVERING )?INDEX ${index}`))
  expect(detail).not.toContain("TEMP B-TREE")
  expect(detail).not.toMatch(/SCAN (surveys|responses)(?! USING)/)
}

type Query = readonly [text: string, params: ReadonlyArray<unknown>]

/** The surveys list, first page and after a cursor: both by the index `surveys_by_activity`. */
const surveysBase = `SELECT * FROM surveys WHERE workspace_id = ? AND trashed = 0`
const surveysList: ReadonlyArray<Query> = [
  [`${surveysBase} ORDER BY updated_at DESC, id DESC LIMIT 26`, ["ws"]],
  [`${surveysBase} AND (updated_at, id) < (?, ?) ORDER BY updated_at DESC, id DESC LIMIT 26`, ["ws", "t", "i"]]
]

/** A page of the responses list as the repository builds it. */
const page = (status: ResponseStatusFilter, after: Option.Option<Position>, createdAfter: string | undefined) => {
  const statement = pageStatement({ surveyId: SurveyId.make("s"), status, order: "createdAt", from: createdAfter, after, limit: 101 })
  return [statement.text, statement.params] as const
}
const cursor = Option.some({ key: "t", id: "i" })

/** `?updatedAfter=`: unfiltered (`responses_by_updated`) and by status (`responses_by_status_updated`). */
const changeSelect = `SELECT * FROM responses WHERE survey_id = ?`
const changeOrder = `ORDER BY updated_at, id LIMIT 101`
const byChange: ReadonlyArray<readonly [Query, "responses_by_updated" | "responses_by_status_updated"]> = [
  [[`${changeSelect} AND updated_at >= ? ${changeOrder}`, ["s", "t"]], "responses_by_updated"],
  [[`${changeSelect} AND (updated_at, id) > (?, ?) ${changeOrder}`, ["s", "t", "i"]], "responses_by_updated"],
  [[`${changeSelect} AND completed = ? AND updated_at >= ? ${changeOrder}`, ["s", 1, "t"]], "responses_by_status_updated"],
  [
    [`${changeSelect} AND completed = ? AND (updated_at, id) > (?, ?) ${changeOrder}`, ["s", 0, "t", "i"]],
    "responses_by_status_updated"
  ]
]

/** The answers of a page of responses. */
const answersOfPage: Query = [answersOfResponses(3), ["a", "b", "c"]]

describe.skipIf(testDatabase === "postgres")("on SQLite", () =>
  layer(TestDatabase())("query plans", (it) => {
    it.effect("surveys list: workspace filter and activity order from one index", () =>
      Effect.gen(function*() {
        for (const [text, params] of surveysList) expectIndexed(yield* plan(text, params), "surveys_by_activity")
      }))

    it.effect("responses list: one range of the clustered table, or of the status index, in keyset order", () =>
      Effect.gen(function*() {
        const explain = ([text, params]: Query) => plan(text, params)
        // The survey's answer_layout: one primary-key lookup, once per statement.
        const layout = /SEARCH surveys USING (COVERING )?INDEX sqlite_autoindex_surveys_1 \(id=\?\)/
        const first = yield* explain(page("all", Option.none(), undefined))
        expect(first).toMatch(/SEARCH responses USING PRIMARY KEY \(survey_id=\?\)/)
        expect(first).toMatch(layout)
        for (const detail of [first, yield* explain(page("all", cursor, undefined))]) {
          expect(detail).not.toContain("TEMP B-TREE")
          expect(detail).not.toMatch(/SCAN responses/)
        }
        expect(yield* explain(page("all", cursor, undefined))).toMatch(
          /SEARCH responses USING PRIMARY KEY \(survey_id=\? AND \(created_at,id\)>\(\?,\?\)\)/
        )
        const since = yield* explain(page("all", Option.none(), "t"))
        expect(since).toMatch(/SEARCH responses USING PRIMARY KEY \(survey_id=\? AND created_at>\?\)/)
        expect(since).not.toContain("TEMP B-TREE")
        // With a status filter the planner may walk the status index or the primary key's range with
        // the filter (it picks by its estimates); either walk is in keyset order with the seek on the cursor.
        for (const status of ["completed", "incomplete"] as const) {
          for (const detail of [
            yield* explain(page(status, cursor, undefined)),
            yield* explain(page(status, Option.none(), "t"))
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
        for (const [[text, params], index] of byChange) expectIndexed(yield* plan(text, params), index)
        // Each save reads the survey's latest updatedAt (src/Responses/ChangeClockRepo.ts): one seek.
        const latest = yield* plan(`SELECT MAX(updated_at) FROM responses WHERE survey_id = ?`, ["s"])
        expect(latest).toMatch(/SEARCH responses USING COVERING INDEX responses_by(_status)?_updated/)
      }))

    it.effect("a response by id, and a page again with its stale answers, in one statement: seeks, no scan", () =>
      Effect.gen(function*() {
        for (const answers of ["stale", "all"] as const) {
          const detail = yield* plan(byIdStatement(answers), ["s", "s", "r"])
          expect(detail).toMatch(/SEARCH responses USING (COVERING )?INDEX responses_by_id \(id=\?/)
          expect(detail).toMatch(/SEARCH a USING PRIMARY KEY \(response_id=\?\)/)
          expect(detail).not.toMatch(/SCAN/)
          expect(detail).not.toContain("TEMP B-TREE")
        }
        const [text, params] = page("all", cursor, undefined)
        const stale = yield* plan(withAnswers(text, "p.created_at, p.id", "stale"), params)
        expect(stale).toMatch(/SEARCH responses USING PRIMARY KEY \(survey_id=\? AND \(created_at,id\)>\(\?,\?\)\)/)
        expect(stale).toMatch(/SEARCH a USING PRIMARY KEY \(response_id=\?\)/)
        expect(stale).not.toMatch(/SCAN (responses|answers|a)\b/)
        expect(stale).not.toContain("TEMP B-TREE")
      }))

    it.effect("answers of a page come from the primary key", () =>
      Effect.gen(function*() {
        const detail = yield* plan(...answersOfPage)
        expect(detail).toMatch(/SEARCH a USING PRIMARY KEY \(response_id=\?\)/)
        expect(detail).toMatch(/SEARCH r USING/)
        expect(detail).not.toMatch(/SCAN/)
        expect(detail).not.toContain("TEMP B-TREE")
      }))
  }))

/**
 * PostgreSQL's counterpart: with sequential and bitmap scans priced out (the test tables are tiny,
 * so the planner would rightly read them whole, and a bitmap scan loses the order), each list
 * query must still be answered by an index walked in its sort order, with no Sort node: so that
 * on a large table the index is there to use.
 */
const pgPlan = (query: string, params: ReadonlyArray<unknown>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql.withTransaction(Effect.gen(function*() {
      yield* sql.unsafe("SET LOCAL enable_seqscan = off")
      yield* sql.unsafe("SET LOCAL enable_bitmapscan = off")
      const rows = yield* sql.unsafe(`EXPLAIN ${toNumbered(query)}`, params).values
      return rows.map((r) => String(r[0])).join("\n")
    }))
  })

const expectPgIndexed = (plan: string, index: string) => {
  expect(plan).toMatch(new RegExp(`Index (Only )?Scan (Backward )?using ${index} on`))
  expect(plan).not.toMatch(/\bSort\b/)
  expect(plan).not.toMatch(/Seq Scan on (surveys|responses|answers)/)
}

describe.runIf(testDatabase === "postgres")("on PostgreSQL", () =>
  layer(TestDatabase())("query plans", (it) => {
    it.effect("surveys list: workspace filter and activity order from one index", () =>
      Effect.gen(function*() {
        for (const [text, params] of surveysList) expectPgIndexed(yield* pgPlan(text, params), "surveys_by_activity")
      }))

    it.effect("responses list: one range of the keyset index, or of the status index, in keyset order", () =>
      Effect.gen(function*() {
        const explain = ([text, params]: Query) => pgPlan(text, params)
        for (const after of [Option.none(), cursor]) {
          const plan = yield* explain(page("all", after, undefined))
          expectPgIndexed(plan, "responses_by_created")
          // The survey's answer_layout: one primary-key lookup.
          expect(plan).toMatch(/Index Scan using surveys_pkey on surveys/)
        }
        expectPgIndexed(yield* explain(page("all", Option.none(), "t")), "responses_by_created")
        for (const status of ["completed", "incomplete"] as const) {
          for (const plan of [
            yield* explain(page(status, cursor, undefined)),
            yield* explain(page(status, Option.none(), "t"))
          ]) {
            expectPgIndexed(plan, "(responses_by_status|responses_by_created)")
          }
        }
        // The keyset bound is a condition of the index walk, not a filter after it.
        expect(yield* explain(page("all", cursor, undefined))).toMatch(
          /Index Cond: \(\(survey_id = .+\) AND \(ROW\(created_at, id\) > ROW\(.+\)\)\)/
        )
      }))

    it.effect("responses by change: updatedAfter, status and the updatedAt keyset order from an index", () =>
      Effect.gen(function*() {
        // With a status filter PostgreSQL may walk either index (by its estimates); both are in order.
        for (const [[text, params], index] of byChange) {
          expectPgIndexed(yield* pgPlan(text, params), index === "responses_by_updated" ? index : "responses_by(_status)?_updated")
        }
        const latest = yield* pgPlan(`SELECT MAX(updated_at) FROM responses WHERE survey_id = ?`, ["s"])
        expect(latest).toMatch(/Index (Only )?Scan (Backward )?using responses_by(_status)?_updated on responses/)
      }))

    it.effect("a save's stamp: the survey's latest response by a backward seek, its own row by its key", () =>
      Effect.gen(function*() {
        for (const created of [false, true]) {
          const plan = yield* pgPlan(stampText({ created, completed: false }), ["s", "r", "2026-01-01T00:00:00.000Z", "[]"])
          expect(plan).toMatch(/Index (Only )?Scan Backward using responses_by(_status)?_updated on responses/)
          expect(plan).toMatch(/Index Scan using responses_pkey on responses/)
          expect(plan).not.toMatch(/Seq Scan on responses/)
        }
      }))

    it.effect("a response by id, and a page again with its stale answers, in one statement: index scans only", () =>
      Effect.gen(function*() {
        const [text, params] = page("all", cursor, undefined)
        for (
          const detail of [
            yield* pgPlan(byIdStatement("stale"), ["s", "s", "r"]),
            yield* pgPlan(byIdStatement("all"), ["s", "s", "r"]),
            yield* pgPlan(withAnswers(text, "p.created_at, p.id", "stale"), params)
          ]
        ) {
          expect(detail).toMatch(/Index (Only )?Scan using \w+ on answers/)
          expect(detail).not.toContain("Seq Scan")
        }
      }))

    it.effect("answers of a page come from the primary key", () =>
      Effect.gen(function*() {
        const plan = yield* pgPlan(...answersOfPage)
        expect(plan).toMatch(/Index (Only )?Scan using answers_pkey on answers/)
        expect(plan).not.toMatch(/Seq Scan on answers/)
      }))
  }))
