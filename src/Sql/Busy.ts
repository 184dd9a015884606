import { SqlError } from "@effect/sql"

/** True when SQLite gave up waiting for a lock held by another connection (SQLITE_BUSY*). */
export const isSqliteBusy = (error: unknown): boolean => {
  const cause = error instanceof SqlError.SqlError ? error.cause : error
  return typeof cause === "object" && cause !== null && "code" in cause &&
    typeof cause.code === "string" && cause.code.startsWith("SQLITE_BUSY")
}
