import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Option, Tracer } from "effect"
import { PgPool } from "../src/Sql/Postgres.js"
import { Reader } from "../src/Sql/Reader.js"
import { TestDatabase, testDatabase } from "./support/TestServer.js"

/** The names of the spans `effect` starts, with the spans themselves started as they would be. */
const spanNames = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const base = yield* Effect.tracer
    const names: Array<string> = []
    const tracer = Tracer.make({
      span: (name, parent, context, links, startTime, kind, options) => {
        names.push(name)
        return base.span(name, parent, context, links, startTime, kind, options)
      },
      context: (f, fiber) => base.context(f, fiber)
    })
    yield* Effect.withTracer(effect, tracer)
    return names
  })

/** The busy timeout of the client's connection and of the reader's. */
const busyTimeouts = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const reader = yield* Reader
  return [
    yield* sql.unsafe("PRAGMA busy_timeout").values.pipe(Effect.orDie),
    yield* reader.values("PRAGMA busy_timeout", []).pipe(Effect.orDie)
  ]
})

layer(TestDatabase())("the database layer", (it) => {
  it.effect.runIf(testDatabase === "postgres")(
    "on PostgreSQL provides its pool (PgPool), on which the reader runs a statement outside a transaction, past the client",
    () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const reader = yield* Reader
        const pool = Option.getOrThrow(yield* Effect.serviceOption(PgPool))
        let taken = 0
        const onAcquire = () => void taken++
        pool.on("acquire", onAcquire)
        yield* Effect.addFinalizer(() => Effect.sync(() => pool.off("acquire", onAcquire)))

        // Every statement of the client is a span; the reader builds none while telemetry is not exported.
        expect(yield* spanNames(sql.unsafe("SELECT 1").pipe(Effect.orDie))).toContain("sql.execute")
        const before = taken
        const read = yield* spanNames(reader.values("SELECT 1", []).pipe(Effect.orDie))
        expect(taken).toBe(before + 1)
        expect(read).toEqual([])
      }).pipe(Effect.scoped)
  )

  it.effect.runIf(testDatabase === "sqlite")("on SQLite provides no pool", () =>
    Effect.gen(function*() {
      expect(Option.isNone(yield* Effect.serviceOption(PgPool))).toBe(true)
    }))

  it.effect.runIf(testDatabase === "sqlite")("waits 5 s for another connection's lock by default, on the client's connection and the reader's", () =>
    Effect.gen(function*() {
      expect(yield* busyTimeouts).toEqual([[[5000]], [[5000]]])
    }))
})

layer(TestDatabase(undefined, { sqliteBusyTimeoutMs: 1234 }))("the database layer with a busy timeout of its own", (it) => {
  it.effect.runIf(testDatabase === "sqlite")("waits that long for another connection's lock, on the client's connection and the reader's", () =>
    Effect.gen(function*() {
      expect(yield* busyTimeouts).toEqual([[[1234]], [[1234]]])
    }))
})
