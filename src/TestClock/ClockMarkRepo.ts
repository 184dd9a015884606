import { SqlClient } from "@effect/sql"
import { Data, Effect } from "effect"
import { dialectOf } from "../Sql/Dialect.js"
import { column, rowShape } from "../Sql/Rows.js"

/** The clock a database was first served on (migration 0017). */
export type ServedClock = "simulated" | "real"

const Mark = rowShape({ clock: column.oneOf("clock", ["simulated", "real"]) })
const Exists = rowShape({ present: column.num("present") })

/** A database first served on the other clock: the process refuses it. */
export class ClockMismatch extends Data.TaggedError("ClockMismatch")<{ readonly message: string }> {}

const mismatch = (marked: ServedClock) =>
  new ClockMismatch({
    message: marked === "simulated"
      ? "this database was served on a simulated clock (serve --test-clock); without --test-clock it is refused, so that simulated instants never mix into real data"
      : "this database was served in real time; a --test-clock process refuses it, so that simulated instants never mix into real data"
  })

/**
 * The database's clock mark (v1-extensions §X5.1): read before migrating, so that a process on the
 * other clock changes nothing, and set by the first `serve`.
 */
export const clockMark = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const present = Effect.map(
    (dialectOf(sql) === "pg"
      ? sql`SELECT CASE WHEN to_regclass('clock_mark') IS NULL THEN 0 ELSE 1 END AS present`
      : sql`SELECT count(*) AS present FROM sqlite_master WHERE type = 'table' AND name = 'clock_mark'`).values,
    (rows) => rows[0] !== undefined && Exists.at.present(rows[0]) !== 0
  )
  /** The mark, undefined while there is none. */
  const read = Effect.map(
    sql`SELECT ${sql.literal(Mark.columns)} FROM clock_mark WHERE id = 1`.values,
    (rows) => rows[0] === undefined ? undefined : Mark.at.clock(rows[0])
  )

  /** Fails when the database was served on the other clock than `clock`; a database never served passes. */
  const check = (clock: ServedClock) =>
    Effect.gen(function*() {
      if (!(yield* present)) return
      const marked = yield* read
      if (marked !== undefined && marked !== clock) return yield* mismatch(marked)
    })

  /** Marks the database as served on `clock` unless it already is; fails when it was served on the other. */
  const markServed = (clock: ServedClock) =>
    Effect.gen(function*() {
      yield* sql`INSERT INTO clock_mark (id, clock) VALUES (1, ${clock}) ON CONFLICT (id) DO NOTHING`
      const marked = yield* read
      if (marked !== undefined && marked !== clock) return yield* mismatch(marked)
    })

  return {
    check: (clock: ServedClock) => Effect.catchTag(check(clock), "SqlError", Effect.die),
    markServed: (clock: ServedClock) => Effect.catchTag(markServed(clock), "SqlError", Effect.die)
  } as const
})
