import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import * as Pg from "pg"
import { vi } from "vitest"
import { isStalePlan } from "../src/Sql/Busy.js"
import { LIFT_STATEMENT_TIMEOUT } from "../src/Sql/Dialect.js"
import { MAX_NAMED, serviceClient } from "../src/Sql/PgServiceClient.js"
import { serviceLockWaiters } from "./support/OutsideConnection.js"
import { postgresDatabase, testDatabase } from "./support/TestServer.js"
import { eventually } from "./support/WebhookReceiver.js"

/**
 * The `pg.Client` class of the service's pools (src/Sql/PgServiceClient.ts), on a connection of
 * its own to an empty database of the test cluster: each of the ways it changes `query` is shown
 * here on its own. Statements are sent as `@effect/sql-pg` and the reader send them, with a
 * callback.
 */

/** How long the clients below wait for an answer; the tests that reach it move a fake clock. */
const ANSWER_WITHIN_MS = 60_000

/** A connection to `url`: of the class (named as the service's connections are), or a plain `pg` one. */
const connected = (url: string, kind: "service" | "plain" = "service") =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = kind === "service"
        ? new (serviceClient(ANSWER_WITHIN_MS))({ connectionString: url, application_name: "survey-service" })
        : new Pg.Client({ connectionString: url })
      await client.connect()
      return client
    }),
    (client) => Effect.promise(() => client.end().catch(() => undefined))
  )

/** The statement's answer or its error, once it is settled. */
const sent = (client: Pg.Client, statement: string | Pg.QueryConfig, values: Array<unknown> = []) =>
  new Promise<Either.Either<Pg.QueryResult, Error>>((resolve) => {
    const done = (error: Error | null | undefined, result: Pg.QueryResult) =>
      resolve(error === null || error === undefined ? Either.right(result) : Either.left(error))
    if (typeof statement === "string") client.query(statement, values, done)
    else client.query(statement, done)
  })

const attempt = (client: Pg.Client, statement: string | Pg.QueryConfig, values: Array<unknown> = []) =>
  Effect.promise(() => sent(client, statement, values))

const errorOf = <A>(outcome: Either.Either<A, Error>): Error | undefined =>
  Either.isLeft(outcome) ? outcome.left : undefined

const run = (client: Pg.Client, statement: string | Pg.QueryConfig, values: Array<unknown> = []) =>
  Effect.flatMap(attempt(client, statement, values), Either.match({ onLeft: Effect.die, onRight: Effect.succeed }))

/** A client of the class on a fresh database; `probe (n INTEGER)` holds one row, 7. */
const fresh = Effect.gen(function*() {
  const url = yield* postgresDatabase(undefined, { migrated: false })
  const client = yield* connected(url)
  yield* run(client, "CREATE TABLE probe (n INTEGER); INSERT INTO probe VALUES (7)")
  return { url, client }
})

/** The statement texts this connection has prepared. */
const preparedTexts = (client: Pg.Client) =>
  Effect.map(
    run(client, "SELECT statement FROM pg_prepared_statements ORDER BY statement"),
    (result) => result.rows.map((row: { statement: string }) => row.statement)
  )

const READ = "SELECT n FROM probe WHERE $1::int = 1"
const readN = (client: Pg.Client) => Effect.map(run(client, READ, [1]), (result) => result.rows)

describe.runIf(testDatabase === "postgres")("the PostgreSQL pool's client class", () => {
  it.scoped("a text with parameters runs unnamed the first time and prepared from the second; a text without any, sent as a string, is never prepared", () =>
    Effect.gen(function*() {
      const { client } = yield* fresh
      yield* run(client, "SELECT $1::int AS n", [1])
      expect(yield* preparedTexts(client)).toEqual([])
      expect((yield* run(client, "SELECT $1::int AS n", [2])).rows).toEqual([{ n: 2 }])
      expect(yield* preparedTexts(client)).toEqual(["SELECT $1::int AS n"])

      // A query object (as the reader sends, rows as arrays) is prepared too, parameters or not.
      const asArrays: Pg.QueryArrayConfig = { text: "SELECT count(*) FROM probe", values: [], rowMode: "array" }
      yield* run(client, asArrays)
      expect((yield* run(client, asArrays)).rows).toEqual([["1"]])
      expect(yield* preparedTexts(client)).toEqual(["SELECT $1::int AS n", "SELECT count(*) FROM probe"])

      // Several statements in one text (a migration's) need the simple protocol: they still run.
      for (let i = 0; i < 2; i++) yield* run(client, "UPDATE probe SET n = n + 1; UPDATE probe SET n = n - 1")
      expect(yield* preparedTexts(client)).toEqual(["SELECT $1::int AS n", "SELECT count(*) FROM probe"])
    }))

  it.scoped(`at most ${MAX_NAMED} texts are prepared on a connection; the rest run unnamed`, () =>
    Effect.gen(function*() {
      const { client } = yield* fresh
      const texts = Array.from({ length: MAX_NAMED + 3 }, (_, i) => `SELECT $1::int + ${i} AS n`)
      for (const text of [...texts, ...texts]) yield* run(client, text, [1])
      const prepared = yield* preparedTexts(client)
      expect(prepared.length).toBe(MAX_NAMED)
      expect(new Set(prepared)).toEqual(new Set(texts.slice(0, MAX_NAMED)))
      // A text past the bound still answers.
      expect((yield* run(client, texts[MAX_NAMED + 2] ?? "", [1])).rows).toEqual([{ n: 1 + MAX_NAMED + 2 }])
    }))

  it.scoped("a boolean is bound as 1 or 0, and U+0000 in a string as U+FFFD, in every form of a statement", () =>
    Effect.gen(function*() {
      const { client } = yield* fresh
      const text = "SELECT $1::text AS a, $2::text AS b"
      const expected = [{ a: "1", b: "x\uFFFDy" }]
      // Twice each: unnamed, then prepared.
      for (let i = 0; i < 2; i++) {
        expect((yield* run(client, text, [true, "x\u0000y"])).rows).toEqual(expected)
        expect((yield* run(client, { text, values: [true, "x\u0000y"] })).rows).toEqual(expected)
      }
      // A statement the caller named itself is bound alike.
      expect((yield* run(client, { name: "own", text, values: [false, "\u0000"] })).rows).toEqual([{ a: "0", b: "\uFFFD" }])
    }))

  it.scoped("a prepared statement gone stale is prepared anew and answered outside a transaction; between BEGIN and its COMMIT or ROLLBACK it fails the statement", () =>
    Effect.gen(function*() {
      const { client } = yield* fresh
      const retype = (to: "TEXT" | "INTEGER", value: string) =>
        run(client, `ALTER TABLE probe ALTER COLUMN n TYPE ${to} USING ${value}`)
      // Prepared (from its second run), then a column's type changes under it: answered all the same.
      yield* readN(client)
      expect(yield* readN(client)).toEqual([{ n: 7 }])
      yield* retype("TEXT", "'seven'")
      expect(yield* readN(client)).toEqual([{ n: "seven" }])

      for (const end of ["ROLLBACK", "COMMIT"] as const) {
        yield* retype("INTEGER", "8")
        yield* run(client, "BEGIN ISOLATION LEVEL READ COMMITTED")
        expect(isStalePlan(errorOf(yield* attempt(client, READ, [1])))).toBe(true)
        yield* run(client, end)

        // The transaction has ended: the text, prepared again, goes stale again and is answered.
        expect(yield* readN(client)).toEqual([{ n: 8 }])
        yield* retype("TEXT", "'nine'")
        expect(yield* readN(client)).toEqual([{ n: "nine" }])
      }
    }))

  describe("a statement without an answer", () => {
    /**
     * The probe table locked on an outside connection: a statement reading it waits for the lock
     * (no statement timeout is set on these connections) until `release`.
     */
    const lockedProbe = (url: string) =>
      Effect.gen(function*() {
        const holder = yield* connected(url, "plain")
        const observer = yield* connected(url, "plain")
        yield* run(holder, "BEGIN")
        yield* run(holder, "LOCK TABLE probe IN ACCESS EXCLUSIVE MODE")
        return {
          release: run(holder, "COMMIT"),
          // Until the class's connection waits for the lock, as the server sees it.
          waiting: eventually(serviceLockWaiters(observer), (count) => count === 1)
        }
      })

    /** Timers faked while the test runs: only `setTimeout`, with which the class bounds a statement. */
    const fakeTimers = Effect.acquireRelease(
      Effect.sync(() => vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] })),
      () => Effect.sync(() => vi.useRealTimers())
    )

    const reading = (client: Pg.Client) => sent(client, "SELECT n FROM probe")

    it.scoped("loses its connection once the bound has passed since it was sent, and fails as a connection that timed out", () =>
      Effect.gen(function*() {
        const { url } = yield* fresh
        yield* fakeTimers
        const client = yield* connected(url)
        // Answered in time: its bound is cleared.
        yield* run(client, "SELECT 1")
        expect(vi.getTimerCount()).toBe(0)

        const { release, waiting } = yield* lockedProbe(url)
        const pending = reading(client)
        yield* waiting
        expect(vi.getTimerCount()).toBe(1)
        vi.advanceTimersByTime(ANSWER_WITHIN_MS - 1)
        expect(client.connection.stream.destroyed).toBe(false)
        vi.advanceTimersByTime(1)
        expect(errorOf(yield* Effect.promise(() => pending))).toMatchObject({
          code: "ETIMEDOUT",
          message: `Connection terminated: no answer from PostgreSQL within ${ANSWER_WITHIN_MS} ms`
        })
        expect(client.connection.stream.destroyed).toBe(true)
        yield* release
      }))

    it.scoped("has no bound in a transaction that lifted the statement timeout, until that transaction ends", () =>
      Effect.gen(function*() {
        const { url } = yield* fresh
        yield* fakeTimers
        const client = yield* connected(url)
        const first = yield* lockedProbe(url)
        yield* run(client, "BEGIN")
        yield* run(client, LIFT_STATEMENT_TIMEOUT)
        const lifted = reading(client)
        yield* first.waiting
        expect(vi.getTimerCount()).toBe(0)
        vi.advanceTimersByTime(ANSWER_WITHIN_MS * 10)
        expect(client.connection.stream.destroyed).toBe(false)
        yield* first.release
        expect(Either.map(yield* Effect.promise(() => lifted), (result) => result.rows)).toEqual(Either.right([{ n: 7 }]))
        yield* run(client, "COMMIT")

        // The transaction has ended: the bound is back.
        const second = yield* lockedProbe(url)
        const bounded = reading(client)
        yield* second.waiting
        expect(vi.getTimerCount()).toBe(1)
        vi.advanceTimersByTime(ANSWER_WITHIN_MS)
        expect(errorOf(yield* Effect.promise(() => bounded))).toMatchObject({ code: "ETIMEDOUT" })
        expect(client.connection.stream.destroyed).toBe(true)
        yield* second.release
      }))
  })
})
