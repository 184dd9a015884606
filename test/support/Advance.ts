import { Chunk, Duration, Effect, Option, TestClock } from "effect"
import { statementsInFlight } from "../../src/Sql/Database.js"

const macrotask = Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, 0)))

/**
 * Ends once no PostgreSQL statement of this process has been in flight for three turns of the
 * event loop: background work woken by the clock has then reached its next sleep. Immediate on
 * SQLite, whose statements complete synchronously. Bounded: it gives up after 100 000 turns.
 */
export const databaseQuiet = Effect.gen(function*() {
  let calm = 0
  for (let turn = 0; turn < 100_000 && calm < 3; turn++) {
    yield* macrotask
    calm = statementsInFlight() === 0 ? calm + 1 : 0
  }
})

/**
 * `TestClock.adjust` that steps from one pending sleep to the next and lets the database work
 * woken by each step finish before taking the next, as it does by itself on SQLite. Use it
 * wherever background loops that talk to the database run under the test clock.
 */
export const advance = (duration: Duration.DurationInput) =>
  Effect.gen(function*() {
    const target = (yield* TestClock.currentTimeMillis) + Duration.toMillis(Duration.decode(duration))
    for (let step = 0; step < 100_000; step++) {
      yield* databaseQuiet
      const next = Chunk.reduce(yield* TestClock.sleeps(), Option.none<number>(), (min, at) =>
        Option.isNone(min) || at < min.value ? Option.some(at) : min)
      if (Option.isNone(next) || next.value > target) break
      yield* TestClock.setTime(next.value)
    }
    yield* TestClock.setTime(target)
    yield* databaseQuiet
  })
