import { Chunk, Duration, Effect, Layer, Option, TestClock } from "effect"
import { type LoopReport, LoopRounds } from "../../src/Background/LoopRounds.js"

/** Where a loop stands, as it last said: working, sleeping until a time, or waiting for a signal until a time. */
type Standing =
  | { readonly _tag: "working" }
  | { readonly _tag: "parked"; readonly until: number }
  | { readonly _tag: "waiting"; readonly until: number }

interface Loop {
  readonly name: string
  standing: Standing
  /** Fibers at work that end by signalling the loop (`LoopReport.wake`). */
  signalling: number
}

// Every loop of this test file's graphs (two servers in one test report here alike), and whoever
// waits for the next report.
const loops = new Set<Loop>()
const listeners = new Set<() => void>()

const heard = () => {
  for (const listener of [...listeners]) listener()
}

const reportOf = (loop: Loop): LoopReport => {
  const stand = (standing: Standing) =>
    Effect.sync(() => {
      loop.standing = standing
      heard()
    })
  return {
    parked: (until) => stand({ _tag: "parked", until }),
    waiting: (until) => stand({ _tag: "waiting", until }),
    working: stand({ _tag: "working" }),
    wake: (signalling) =>
      Effect.acquireUseRelease(
        Effect.sync(() => {
          loop.signalling++
        }),
        () => signalling,
        () =>
          Effect.sync(() => {
            loop.signalling--
            heard()
          })
      )
  }
}

/** Records every round the background loops report (src/Background/LoopRounds.ts): what `advance` waits on. */
export const RecordedRounds = Layer.succeed(LoopRounds, {
  register: (name) =>
    Effect.map(
      Effect.acquireRelease(
        Effect.sync(() => {
          const loop: Loop = { name, standing: { _tag: "working" }, signalling: 0 }
          loops.add(loop)
          heard()
          return loop
        }),
        (loop) =>
          Effect.sync(() => {
            loops.delete(loop)
            heard()
          })
      ),
      reportOf
    )
})

/** The next report of any loop, or `withinMillis` of real time without one. */
const nextReport = (withinMillis: number) =>
  Effect.async<void>((resume) => {
    const done = () => {
      clearTimeout(timer)
      listeners.delete(done)
      resume(Effect.void)
    }
    const timer = setTimeout(done, withinMillis)
    listeners.add(done)
    return Effect.sync(() => {
      clearTimeout(timer)
      listeners.delete(done)
    })
  })

const macrotask = Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, 0)))

/** How long, in real time, the loops may take to finish the rounds one clock move woke before a test fails. */
const ROUNDS_BOUND_MILLIS = 60_000

/**
 * Ends once every background loop rests past the test clock's present time: it said it
 * finished its round and sleeps (its sleep is pending on the clock) or waits for a signal, and
 * nothing is at work that ends by signalling it. A loop woken by the clock (it sleeps until now
 * or before) or by a signal has not finished yet.
 * Bounded: a test fails naming the loops that kept working for a minute of real time.
 */
export const loopsResting = Effect.gen(function*() {
  const giveUpAt = performance.now() + ROUNDS_BOUND_MILLIS
  while (true) {
    const now = yield* TestClock.currentTimeMillis
    const working = [...loops].filter((loop) =>
      loop.signalling > 0 || loop.standing._tag === "working" || loop.standing.until <= now
    )
    let pending: ReadonlyArray<number> | undefined
    if (working.length === 0) {
      pending = Chunk.toReadonlyArray(yield* TestClock.sleeps())
      const sleeps = pending
      // Said, and about to sleep: its sleep reaches the clock at its fiber's next turn.
      const falling = [...loops].filter((loop) =>
        loop.standing._tag !== "working" && Number.isFinite(loop.standing.until) && !sleeps.includes(loop.standing.until)
      )
      if (falling.length === 0) return
    }
    const left = giveUpAt - performance.now()
    if (left <= 0) {
      const names = working.length > 0 ? working.map((loop) => loop.name) : [...loops].map((loop) => loop.name)
      return yield* Effect.dieMessage(`background loops still working after ${ROUNDS_BOUND_MILLIS} ms: ${names.join(", ")}`)
    }
    yield* pending === undefined ? nextReport(left) : macrotask
  }
})

/**
 * `TestClock.adjust` that steps from one pending sleep to the next and, before each step and at
 * the end, waits until the background loops woken by the previous step have finished their
 * rounds and rest again (`loopsResting`). Use it wherever background loops run under the test clock.
 */
export const advance = (duration: Duration.DurationInput) =>
  Effect.gen(function*() {
    const target = (yield* TestClock.currentTimeMillis) + Duration.toMillis(Duration.decode(duration))
    for (let step = 0; step < 100_000; step++) {
      yield* loopsResting
      const next = Chunk.reduce(yield* TestClock.sleeps(), Option.none<number>(), (min, at) =>
        Option.isNone(min) || at < min.value ? Option.some(at) : min)
      if (Option.isNone(next) || next.value > target) break
      yield* TestClock.setTime(next.value)
    }
    yield* TestClock.setTime(target)
    yield* loopsResting
  })
