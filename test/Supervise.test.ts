import { SqlClient } from "@effect/sql"
import { expect, it } from "@effect/vitest"
import { Cause, Clock, Duration, Effect, Layer, Logger } from "effect"
import { DatabaseLive } from "../src/App.js"
import { processJob, runJob } from "../src/Background/Jobs.js"
import { advance, RecordedRounds } from "./support/Advance.js"
import { TestConfig } from "./support/TestServer.js"

/** Every line logged, with its level and cause. */
const loggedLines = () => {
  const lines: Array<{ readonly level: string; readonly message: string; readonly cause: string }> = []
  const layer = Logger.replace(
    Logger.defaultLogger,
    Logger.make(({ cause, logLevel, message }) => {
      lines.push({
        level: logLevel.label,
        message: Array.isArray(message) ? message.join(" ") : String(message),
        cause: Cause.isEmpty(cause) ? "" : Cause.pretty(cause)
      })
    })
  )
  return { lines, layer }
}

const log = loggedLines()

it.scoped("a loop whose database fails retries 1 s, 2 s, 4 s … apart, at most 30 s, and logs once as it starts failing and once as it recovers", () =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE probe_ticks (at BIGINT NOT NULL)`
    const tries: Array<number> = []
    // As the aggregator polls: every 100 ms, a statement each time.
    yield* runJob(processJob({
      name: "probe",
      every: Duration.millis(100),
      run: Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        tries.push(now)
        yield* sql`INSERT INTO probe_ticks (at) VALUES (${now})`
      })
    }))
    yield* advance("200 millis")
    expect(tries).toEqual([0, 100, 200])

    // The table is gone: every statement of the loop fails until it is back.
    yield* sql`ALTER TABLE probe_ticks RENAME TO probe_ticks_away`
    tries.length = 0
    yield* advance("70 seconds")
    expect(tries).toEqual([300, 1_300, 3_300, 7_300, 15_300, 31_300, 61_300])
    const failing = log.lines.filter((line) => line.message.includes("probe"))
    expect(failing.map(({ level, message }) => ({ level, message }))).toEqual([
      { level: "ERROR", message: "probe failed; retrying in 1s" }
    ])
    expect(failing[0]?.cause).toContain("SqlError")

    yield* sql`ALTER TABLE probe_ticks_away RENAME TO probe_ticks`
    tries.length = 0
    yield* advance("21300 millis")
    // The next try (30 s after the last) succeeds; the 100 ms schedule goes on from there.
    expect(tries).toEqual([91_300, 91_400, 91_500])
    expect(log.lines.filter((line) => line.message.includes("probe")).map(({ level, message }) => ({ level, message }))).toEqual([
      { level: "ERROR", message: "probe failed; retrying in 1s" },
      { level: "INFO", message: "probe recovered after 7 failures" }
    ])
    const stored = yield* sql<{ readonly n: number }>`SELECT count(*) AS n FROM probe_ticks`
    expect(Number(stored[0]?.n)).toBe(6)

    // A second outage starts from the first delay again.
    yield* sql`ALTER TABLE probe_ticks RENAME TO probe_ticks_away`
    const failedAt = (yield* Clock.currentTimeMillis) + 100
    tries.length = 0
    yield* advance("4 seconds")
    expect(tries).toEqual([failedAt, failedAt + 1_000, failedAt + 3_000])
    expect(log.lines.filter((line) => line.message.includes("probe")).map(({ message }) => message)).toEqual([
      "probe failed; retrying in 1s",
      "probe recovered after 7 failures",
      "probe failed; retrying in 1s"
    ])
  }).pipe(
    Effect.provide(DatabaseLive.pipe(Layer.provide(TestConfig({})))),
    Effect.provide(RecordedRounds),
    Effect.provide(log.layer)
  ))
