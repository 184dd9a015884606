import { SqlClient, type SqlError } from "@effect/sql"
import { Context, Effect } from "effect"

/** A failure of the database itself (unreachable, a timeout, a constraint): the caller's defect, or a 503 where the service says so. */
export type DatabaseError = SqlError.SqlError

/**
 * Transactions for a service that spans several repositories: the repositories' statements run
 * inside `within` share one transaction, and nested calls join the outer one. The service never
 * holds the database client itself.
 */
export class Transactions extends Effect.Service<Transactions>()("Sql/Transactions", {
  effect: Effect.map(SqlClient.SqlClient, (sql) => ({
    within: <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | DatabaseError, R> =>
      sql.withTransaction(effect),
    /** `within`, for a service whose callers cannot act on a failure of the database: it is a defect. */
    withinOrDie: <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      sql.withTransaction(effect).pipe(Effect.catchTag("SqlError", Effect.die))
  }))
}) {}

/**
 * How much work one transaction or one statement of a long operation takes on: an operation whose
 * work grows with the stored data (an erasure, a purge, a sweep) goes through it in batches of
 * these sizes, each committed on its own, so that no transaction holds its locks for a time that
 * grows with the data. The defaults are the production values; tests set small ones.
 */
export class WorkBatches extends Context.Reference<WorkBatches>()("Sql/WorkBatches", {
  defaultValue: (): {
    /** Responses an erasure deletes per transaction, with their events. */
    readonly erasure: number
    /** Rows a purge or a sweep deletes per statement. */
    readonly purge: number
    /** Rows an import stores per transaction. */
    readonly import: number
    /**
     * Responses a rebuild of stored analytics counts per transaction: each batch holds the
     * aggregation's position (and on SQLite the one writer) for a few milliseconds, whatever the
     * survey's size.
     */
    readonly rebuild: number
    /**
     * Called after each committed batch with the operation's name: nothing in production; tests
     * stop an operation there to show that running it again finishes the work.
     */
    readonly committed: ((operation: string) => Effect.Effect<void>) | undefined
  } => ({ erasure: 100, purge: 2000, import: 400, rebuild: 250, committed: undefined })
}) {}

/**
 * One turn of the event loop: what waits meanwhile (requests to read, a transaction waiting for
 * the one connection, a timer) goes first. A fiber that releases the connection and takes it
 * again at once would otherwise take it before the fiber woken for it runs, and the requests of
 * a long operation's whole length would wait behind its batches run back to back.
 */
const eventLoopTurn = Effect.async<void>((resume) => {
  const turn = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(turn))
})

/**
 * After each committed batch of a long operation: a turn of the event loop, so that the process's
 * requests and transactions go between two batches, then WorkBatches' `committed` hears it.
 */
export const batchCommitted = (operation: string) =>
  Effect.zipRight(
    eventLoopTurn,
    Effect.flatMap(WorkBatches, (batches) => batches.committed === undefined ? Effect.void : batches.committed(operation))
  )

/** Bounds the loops of `inBatches`: far more batches than any table holds rows. */
const maxBatches = 100_000_000

/**
 * Runs `batch` (a statement, or a transaction, that deletes at most `limit` rows and answers how
 * many) with WorkBatches' `purge` as the limit until it deletes fewer; answers the total. Each
 * batch commits on its own: a run stopped half way leaves the rest for the next one.
 */
export const inBatches = <E, R>(operation: string, batch: (limit: number) => Effect.Effect<number, E, R>) =>
  Effect.gen(function*() {
    const { purge } = yield* WorkBatches
    let total = 0
    for (let step = 0; step < maxBatches; step++) {
      const count = yield* batch(purge)
      total += count
      if (count < purge) break
      yield* batchCommitted(operation)
    }
    return total
  })
