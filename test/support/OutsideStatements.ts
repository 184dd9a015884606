import { Database } from "bun:sqlite"
import { Effect } from "effect"
import { AppConfig } from "../../src/Config.js"
import { onOutside, outsideConnection } from "./OutsideConnection.js"

/**
 * A runner of statements (several at once, `BEGIN; …; COMMIT;` included) on the test's database
 * over one connection of the test's own, held for the scope: as an operator's tool or another
 * process writes, for tests that write many times while the service reads.
 */
export const outsideStatements = Effect.gen(function*() {
  const config = yield* AppConfig
  if (config.databaseUrl !== undefined) {
    const client = yield* outsideConnection
    return (text: string) => Effect.asVoid(onOutside(client, text))
  }
  const file = yield* Effect.acquireRelease(
    Effect.sync(() => {
      const handle = new Database(config.databasePath)
      handle.exec("PRAGMA busy_timeout = 5000")
      return handle
    }),
    (handle) => Effect.sync(() => handle.close())
  )
  return (text: string) =>
    Effect.sync(() => {
      file.exec(text)
    })
})
