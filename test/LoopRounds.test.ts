import { expect, it } from "@effect/vitest"
import { Clock, Duration, Effect, Queue } from "effect"
import { waiting, working } from "../src/Background/LoopRounds.js"
import { processJob, runJob } from "../src/Background/Jobs.js"
import { registerLoop, supervise } from "../src/Background/Supervise.js"
import { advance, RecordedRounds } from "./support/Advance.js"

// A round that takes real time, as a round of statements on PostgreSQL does: the clock must not
// move while it runs, or the loop's next sleep starts late and it misses what the test waits for.
const roundTrip = Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, 25)))

it.scoped("advance moves the clock only once the rounds it woke are finished and asleep again", () =>
  Effect.gen(function*() {
    const runs: Array<number> = []
    yield* runJob(processJob({
      name: "every 100 ms",
      every: Duration.millis(100),
      run: Effect.zipRight(roundTrip, Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => runs.push(now))))
    }))
    yield* advance("1 second")
    expect(runs).toEqual([0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000])
  }).pipe(Effect.provide(RecordedRounds)))

it.scoped("a loop woken by another one's signal is waited for as well", () =>
  Effect.gen(function*() {
    const signals = yield* Queue.unbounded<number>()
    const handled: Array<number> = []
    const follower = yield* registerLoop("follower")
    // Sleeps on the clock and signals the follower after each (slow) round.
    yield* runJob(processJob({
      name: "leader",
      every: Duration.seconds(1),
      run: Effect.gen(function*() {
        yield* roundTrip
        yield* follower.wake(Effect.flatMap(Clock.currentTimeMillis, (now) => Queue.offer(signals, now)))
      })
    }))
    // Waits for the signal, then works for a while before it takes the next one.
    yield* supervise(
      "follower",
      Effect.gen(function*() {
        yield* waiting(Number.POSITIVE_INFINITY)
        const at = yield* Queue.take(signals)
        yield* working
        yield* roundTrip
        yield* roundTrip
        handled.push(at)
      }).pipe(Effect.forever),
      { report: follower }
    )
    yield* advance("3 seconds")
    expect(handled).toEqual([0, 1000, 2000, 3000])
  }).pipe(Effect.provide(RecordedRounds)))
