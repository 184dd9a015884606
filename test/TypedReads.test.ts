import { SqlClient } from "@effect/sql"
import { describe, expect, it, layer } from "@effect/vitest"
import { Cause, Effect, Exit, Option, Stream } from "effect"
import { AggregateRepo } from "../src/Analytics/AggregateRepo.js"
import { Aggregator } from "../src/Analytics/Aggregator.js"
import { surveyBranch } from "../src/Analytics/SnapshotSql.js"
import { SurveyId } from "../src/Domain/Ids.js"
import { Idempotency, storedKey } from "../src/Http/Idempotency.js"
import { csvStream } from "../src/Responses/Csv.js"
import { CsvExportRepo } from "../src/Responses/CsvExportRepo.js"
import { column, named, rowShape, text } from "../src/Sql/Rows.js"
import { clientFor } from "./support/ApiClient.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { TestServer } from "./support/TestServer.js"

// A row that no longer has the shape a read expects (a column retyped by hand, a value written by
// another program) must stop the read with the column's name, never turn into a wrong answer.
// SQLite stores any value in any column; PostgreSQL needs the column's type changed first.

/** The defect `effect` dies with, printed; fails the test when it succeeds or fails otherwise. */
const defectOf = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.exit(effect), (exit) => {
    if (Exit.isSuccess(exit)) throw new Error(`expected a defect, got ${JSON.stringify(exit.value)}`)
    expect(Cause.isDie(exit.cause)).toBe(true)
    return Cause.pretty(exit.cause)
  })

/** Runs the statements of the test's database. */
const byDialect = (statements: { readonly pg: ReadonlyArray<string>; readonly sqlite: ReadonlyArray<string> }) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.forEach(
      sql.onDialectOrElse({ pg: () => statements.pg, orElse: () => statements.sqlite }),
      (statement) => sql.unsafe(statement),
      { discard: true }
    )).pipe(Effect.orDie)
/** Runs `statements` on PostgreSQL only (column type changes that SQLite does not need). */
const onPostgres = (...statements: ReadonlyArray<string>) => byDialect({ pg: statements, sqlite: [] })

const run = (statement: string) => Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(statement)).pipe(Effect.orDie)

const main = SurveyId.make("srv_main")

layer(TestServer(baseFixture))("a stored idempotent answer of the wrong shape", (it) => {
  it.effect("the repeat dies naming the column instead of replaying a wrong status", () =>
    Effect.gen(function*() {
      const idempotency = yield* Idempotency
      const input = {
        scope: { _tag: "Workspace", workspaceId: "ws_a" },
        key: Option.some("typed-1"),
        request: "hash-1"
      } as const
      const first = yield* idempotency.once(input, Effect.succeed({ status: 201, body: "{\"id\":1}" }))
      expect(first).toEqual({ status: 201, body: "{\"id\":1}", replayed: false })
      expect(yield* idempotency.once(input, Effect.die("runs once"))).toEqual({ ...first, replayed: true })

      yield* onPostgres("ALTER TABLE idempotency_keys ALTER COLUMN status TYPE TEXT")
      yield* run(`UPDATE idempotency_keys SET status = 'created' WHERE idempotency_key = '${storedKey("typed-1")}'`)
      const defect = yield* defectOf(idempotency.once(input, Effect.die("runs once")))
      expect(defect).toContain("Column status: expected a number, got string")
    }))
})

layer(TestServer(baseFixture))("stored analytics of the wrong shape", (it) => {
  it.effect("the counters, the layout signature and the position each die naming their column", () =>
    Effect.gen(function*() {
      const repo = yield* AggregateRepo
      const aggregator = yield* Aggregator
      yield* aggregator.catchUp()
      const api = yield* clientFor(TOKENS.editor)
      yield* api.analytics.get({ path: { id: main } })
      expect((yield* repo.snapshot(main)).stored.aggregates.reach.size).toBeGreaterThan(0)
      const position = yield* repo.position
      expect(position).toBeGreaterThan(0)
      // The consumed changes are pruned: the log's MAX(seq) is NULL, read as 0.
      expect(yield* repo.latestChange).toBe(0)

      // A counter that is no longer a number: GET /analytics answers 500, not a made-up count.
      // (PostgreSQL refuses text in the union's integer column itself, so there it is a NULL.)
      yield* byDialect({
        pg: ["ALTER TABLE analytics_reach ALTER COLUMN count DROP NOT NULL", "UPDATE analytics_reach SET count = NULL"],
        sqlite: ["UPDATE analytics_reach SET count = 'many'"]
      })
      expect(yield* defectOf(repo.snapshot(main))).toMatch(/Column count: expected a number, got (string|null)/)
      // The contract declares no 500: the client fails with the answer it could not decode.
      const broken = yield* Effect.flip(api.analytics.get({ path: { id: main } }))
      expect(broken._tag === "ResponseError" ? broken.response.status : broken._tag).toBe(500)

      yield* byDialect({
        pg: [
          "ALTER TABLE analytics_surveys ALTER COLUMN signature DROP DEFAULT",
          "ALTER TABLE analytics_surveys ALTER COLUMN signature TYPE INTEGER USING 7"
        ],
        sqlite: ["UPDATE analytics_surveys SET signature = X'07'"]
      })
      expect(yield* defectOf(repo.storedSignature(main))).toMatch(/Column signature: expected text, got (number|object)/)

      // The aggregator's position: a step stops rather than starting again from 0.
      yield* onPostgres("ALTER TABLE analytics_position ALTER COLUMN seq TYPE TEXT")
      yield* run("UPDATE analytics_position SET seq = 'latest'")
      expect(yield* defectOf(repo.position)).toContain("Column seq: expected a number, got string")
      expect(yield* defectOf(aggregator.step())).toContain("Column seq: expected a number, got string")
    }))
})

layer(TestServer(baseFixture))("an exported answer of the wrong shape", (it) => {
  it.effect("the export dies naming the question's column instead of writing the value as text", () =>
    Effect.gen(function*() {
      const exports = yield* CsvExportRepo
      const request = {
        surveyId: "srv_main",
        questions: [{ id: "q_text", type: "textarea", label: "Say something" }],
        status: "all",
        createdAfter: undefined,
        updatedAfter: undefined
      } as const
      const decoder = new TextDecoder()
      const exported = (yield* Stream.runCollect(csvStream(exports, request))).pipe((chunks) =>
        [...chunks].map((bytes) => decoder.decode(bytes)).join("")
      )
      expect(exported.split("\r\n")[1]).toMatch(/^rsp_1,srv_main,user-1,true,.*,hello$/)

      yield* byDialect({
        pg: ["ALTER TABLE answers ALTER COLUMN value TYPE INTEGER USING length(value)"],
        sqlite: ["UPDATE answers SET value = X'68' WHERE response_id = 'rsp_1' AND question_id = 'q_text'"]
      })
      const defect = yield* defectOf(Stream.runCollect(csvStream(exports, request)))
      expect(defect).toMatch(/Column answers\.value \(q_text\): expected text or null, got (number|object)/)
    }))
})

describe("reads by column name", () => {
  it("find the column in the list the statement was built from, and refuse a name it does not have", () => {
    expect(named(surveyBranch.columns, "signature", text)([0, null, "sig"])).toBe("sig")
    expect(() => named(surveyBranch.columns, "question_id", text)).toThrow("No column question_id")
  })
})

describe("flags", () => {
  it("read 0 and 1 as booleans and stop on any other value with the column's name", () => {
    const Flags = rowShape({ trashed: column.flag("s.trashed") })
    expect(Flags.columns).toBe("s.trashed")
    expect(Flags.read([0])).toEqual({ trashed: false })
    expect(Flags.read([1])).toEqual({ trashed: true })
    expect(() => Flags.read([2])).toThrow("Column trashed: expected 0 or 1, got number")
    expect(() => Flags.read(["1"])).toThrow("Column trashed: expected a number, got string")
  })
})
