import { SqlClient, type SqlError } from "@effect/sql"
import { Effect } from "effect"

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
      sql.withTransaction(effect)
  }))
}) {}
