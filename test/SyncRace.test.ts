import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { PROCESS_TEST_TIMEOUT, serveProcess, sharedDatabase } from "./support/ServeProcess.js"
import { raceEnv, raceFixture, runSyncRace } from "./support/SyncRace.js"

// The no-miss guarantee of sync by `updatedAfter` (v1-extensions X2.1) under a race: two real
// `serve` processes on one database (a SQLite file; a PostgreSQL database on the PostgreSQL pass),
// 12 writers creating, changing, completing and deleting responses of three surveys through both,
// and three readers walking by `updatedAfter` with pages of 2, 10 and 100. Every acknowledged
// change is checked against every reader's walks (test/support/SyncRace.ts). The writers write until
// 400 changes were acknowledged (120 s at most; `SYNC_RACE_SECONDS` sets a least duration too);
// `bun run bench:sync` runs the same race for longer.
const seconds = Number(process.env["SYNC_RACE_SECONDS"] ?? "0")

describe("sync by updatedAfter under concurrent writers, two processes", () => {
  it.live("every acknowledged change reaches every reader before it passes the change's instant", () =>
    Effect.gen(function*() {
      const db = yield* sharedDatabase(raceFixture)
      const first = yield* serveProcess(db.flags, raceEnv)
      const second = yield* serveProcess(db.flags, raceEnv)
      const report = yield* Effect.promise(() =>
        runSyncRace({
          bases: [first.base, second.base],
          seconds,
          minChanges: 400,
          maxSeconds: 120,
          writers: 12,
          readers: [{ limit: 2, pauseMs: 100 }, { limit: 10, pauseMs: 100 }, { limit: 100, pauseMs: 1500 }]
        })
      )
      const { late, lost, misses, ...counts } = report
      console.log(`sync race: ${JSON.stringify({ ...counts, misses: misses.length, late: late.length, lost: lost.length })}`)
      // Enough of a race to mean something: changes of every kind, walks that followed them.
      expect(report.changes).toBeGreaterThanOrEqual(400)
      expect(report.deletions).toBeGreaterThan(5)
      expect(report.walks).toBeGreaterThan(30)
      expect({ misses: misses.slice(0, 5), late: late.slice(0, 5), lost: lost.slice(0, 5), torn: report.torn }).toEqual({
        misses: [],
        late: [],
        lost: [],
        torn: 0
      })
    }).pipe(Effect.scoped), PROCESS_TEST_TIMEOUT + 120_000)
})
