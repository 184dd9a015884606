import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { JobLeases } from "../src/Background/JobLeases.js"
import { TestDatabase } from "./support/TestServer.js"

layer(TestDatabase())((it) => {
  it.effect("a stop whose lease cannot be given up, the database gone, still ends cleanly", () =>
    Effect.gen(function*() {
      const jobs = yield* JobLeases
      const sql = yield* SqlClient.SqlClient
      const scope = yield* Scope.make()
      const ran: Array<string> = []
      const step = yield* jobs.whileHeld("lease-release-probe", Effect.sync(() => ran.push("step"))).pipe(
        Scope.extend(scope)
      )
      yield* step
      expect(ran).toEqual(["step"])
      // The lease is held; the table it would be given up in is gone, as a database gone away is.
      yield* sql`ALTER TABLE job_leases RENAME TO job_leases_away`
      const closed = yield* Effect.exit(Scope.close(scope, Exit.void))
      yield* sql`ALTER TABLE job_leases_away RENAME TO job_leases`
      expect(Exit.isSuccess(closed)).toBe(true)
      // The lease stays with its holder until it lapses.
      const rows = yield* sql`SELECT holder FROM job_leases WHERE name = 'lease-release-probe'`
      expect(rows[0]?.["holder"]).not.toBeNull()
    }))
})
