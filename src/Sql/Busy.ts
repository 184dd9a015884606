import { SqlError } from "@effect/sql"

const codeOf = (error: unknown): string | undefined => {
  const cause = error instanceof SqlError.SqlError ? error.cause : error
  return typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string"
    ? cause.code
    : undefined
}

/** True when SQLite gave up waiting for a lock held by another connection (SQLITE_BUSY*). */
export const isSqliteBusy = (error: unknown): boolean => codeOf(error)?.startsWith("SQLITE_BUSY") === true

/**
 * True when PostgreSQL could not be reached or the connection was lost: refused or timed-out
 * connections, a server shutting down or starting (class 57P), connection exceptions (class
 * 08), too many connections (53300). Such a request changed nothing that was acknowledged
 * and may be retried once the database is back.
 */
export const isPgUnavailable = (error: unknown): boolean => {
  const code = codeOf(error)
  if (code !== undefined) {
    if (code.startsWith("08") || code.startsWith("57P") || code === "53300") return true
    if (/^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|EHOSTUNREACH|ENOTFOUND|EAI_AGAIN|ConnectionRefused)$/.test(code)) {
      return true
    }
  }
  if (error instanceof SqlError.SqlError) {
    if (error.message.startsWith("Failed to acquire connection") || error.message === "Connection error") return true
    const cause = error.cause
    if (cause instanceof Error && /Connection terminated|connection timeout|Client has encountered a connection error|Connection ended/i.test(cause.message)) {
      return true
    }
  }
  return false
}

/**
 * True when PostgreSQL refused a prepared statement whose result columns changed type since it
 * was prepared ("cached plan must not change result type": a migration altered a column while the
 * process ran). The statement did nothing and its transaction, if any, rolled back; the
 * connection prepares its statements anew (src/Sql/PgServiceClient.ts `serviceClient`), so the
 * request may be retried.
 */
export const isStalePlan = (error: unknown): boolean => {
  const cause = error instanceof SqlError.SqlError ? error.cause : error
  return codeOf(cause) === "0A000" && cause instanceof Error &&
    cause.message.includes("cached plan must not change result type")
}

/**
 * True when no pooled PostgreSQL connection came free within the pool's acquire timeout
 * (`DATABASE_POOL_TIMEOUT_MS`): the statement never ran.
 */
export const isPgPoolExhausted = (error: unknown): boolean =>
  error instanceof SqlError.SqlError && error.message.startsWith("Failed to acquire connection") &&
  error.cause instanceof Error && error.cause.message === "timeout exceeded when trying to connect"

/** True when PostgreSQL refused a lock within the transaction's `lock_timeout` (55P03, lock_not_available). */
export const isPgLockNotAvailable = (error: unknown): boolean => codeOf(error) === "55P03"

/**
 * True when PostgreSQL stopped a statement that ran too long: the server's `statement_timeout`
 * (`DATABASE_STATEMENT_TIMEOUT_MS`; 57014, the only cancel the service meets, since it never
 * cancels a statement itself) or a `lock_timeout` set for the database or role (55P03). The
 * statement changed nothing, its transaction rolls back, and the connection stays usable.
 */
export const isPgStatementTimeout = (error: unknown): boolean => {
  const code = codeOf(error)
  return code === "57014" || isPgLockNotAvailable(error)
}

/**
 * The database cannot answer now (busy, unreachable, too slow, or a statement to prepare anew
 * after a migration); the request may be retried.
 */
export const isDatabaseUnavailable = (error: unknown): boolean =>
  isSqliteBusy(error) || isPgUnavailable(error) || isPgStatementTimeout(error) || isStalePlan(error)
