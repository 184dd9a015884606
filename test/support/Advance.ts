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
  /** Fibers waiting for an answer from outside, under a deadline on the clock (`LoopReport.exchange`). */
  exchanging: number
}

// Every loop of this test file's graphs (two servers in one test report here alike), and whoever
// waits for the next report.
const loops = new Set<Loop>()
const listeners = new Set<() => void>()
// The requests each of the tests' receivers holds unanswered (`holder`).
const holders = new Set<Set<Request>>()
// Whether `loopsResting` waits on an exchange no receiver holds, and whoever waits for it to (`exchangeAwaited`).
let awaitingExchange = false
const exchangeWatchers = new Set<() => void>()

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
      ),
    // Counted from the moment the loop says so, not from when the forked fiber starts: the loop
    // may rest before it does.
    exchange: (exchange) =>
      Effect.sync(() => {
        loop.exchanging++
        return Effect.ensuring(
          exchange,
          Effect.sync(() => {
            loop.exchanging--
            heard()
          })
        )
      })
  }
}

/** Records every round the background loops report (src/Background/LoopRounds.ts): what `advance` waits on. */
export const RecordedRounds = Layer.succeed(LoopRounds, {
  register: (name) =>
    Effect.map(
      Effect.acquireRelease(
        Effect.sync(() => {
          const loop: Loop = { name, standing: { _tag: "working" }, signalling: 0, exchanging: 0 }
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

/**
 * A test receiver's hold on its requests: `hold` counts a request as held back until its answer
 * settles or its client gives up on it. A held request is the test's to answer (an endpoint that
 * hangs, or answers once the test says so): `loopsResting` lets the clock pass an exchange waiting
 * for it. Every other exchange in flight is about to end by itself, and `loopsResting` waits for it.
 * The receiver's holds end with the scope.
 */
export const holder = Effect.map(
  Effect.acquireRelease(
    Effect.sync(() => {
      const held = new Set<Request>()
      holders.add(held)
      return held
    }),
    (held) =>
      Effect.sync(() => {
        holders.delete(held)
        heard()
      })
  ),
  (held) => ({
    hold: <A>(request: Request, answer: Promise<A>): Promise<A> => {
      const release = () => {
        if (held.delete(request)) heard()
      }
      held.add(request)
      request.signal.addEventListener("abort", release, { once: true })
      heard()
      return answer.finally(release)
    }
  })
)

/** Ends once `loopsResting` waits for an exchange in flight that no receiver holds. */
export const exchangeAwaited = Effect.async<void>((resume) => {
  if (awaitingExchange) return resume(Effect.void)
  const done = () => {
    exchangeWatchers.delete(done)
    resume(Effect.void)
  }
  exchangeWatchers.add(done)
  return Effect.sync(() => {
    exchangeWatchers.delete(done)
  })
})

/** Exchanges in flight beyond the requests the receivers hold: each ends by itself, soon. */
const unheldExchanges = () => {
  let exchanging = 0
  for (const loop of loops) exchanging += loop.exchanging
  let held = 0
  for (const requests of holders) held += requests.size
  return exchanging - held
}

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

// `loopsResting` but for clearing `awaitingExchange` at its end.
const restingLoops = Effect.gen(function*() {
  const giveUpAt = performance.now() + ROUNDS_BOUND_MILLIS
  while (true) {
    const now = yield* TestClock.currentTimeMillis
    const working = [...loops].filter((loop) =>
      loop.signalling > 0 || loop.standing._tag === "working" || loop.standing.until <= now
    )
    const unheld = unheldExchanges()
    awaitingExchange = unheld > 0
    if (awaitingExchange) for (const watcher of [...exchangeWatchers]) watcher()
    let pending: ReadonlyArray<number> | undefined
    if (working.length === 0 && unheld <= 0) {
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
      if (working.length === 0 && unheld > 0) {
        const names = [...loops].filter((loop) => loop.exchanging > 0).map((loop) => loop.name)
        return yield* Effect.dieMessage(
          `${unheld} exchange(s) of ${names.join(", ")} still in flight after ${ROUNDS_BOUND_MILLIS} ms ` +
            "while no test receiver holds their requests (a receiver holds one while its answer is an unsettled promise)"
        )
      }
      const names = working.length > 0 ? working.map((loop) => loop.name) : [...loops].map((loop) => loop.name)
      return yield* Effect.dieMessage(`background loops still working after ${ROUNDS_BOUND_MILLIS} ms: ${names.join(", ")}`)
    }
    yield* pending === undefined ? nextReport(left) : macrotask
  }
})

/**
 * Ends once every background loop rests past the test clock's present time: it said it
 * finished its round and sleeps (its sleep is pending on the clock) or waits for a signal, and
 * nothing is at work that ends by signalling it. A loop woken by the clock (it sleeps until now
 * or before) or by a signal has not finished yet. An exchange in flight (a webhook attempt) must
 * end first unless a test receiver holds its request: the clock would otherwise reach the
 * exchange's own timeout while its answer is on the way. One held back by a receiver (an endpoint
 * that hangs) lets the clock pass, so that its timeout can come.
 * Bounded: a test fails naming the loops that kept working for a minute of real time.
 */
export const loopsResting = restingLoops.pipe(
  Effect.ensuring(Effect.sync(() => {
    awaitingExchange = false
  }))
)

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
