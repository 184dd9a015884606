import { Context, Effect, Layer, type Scope } from "effect"

/** What one background loop says about itself: when it works and until when it rests. */
export interface LoopReport {
  /** The loop finished a round and sleeps until `until` (Clock millis): only the clock wakes it. */
  readonly parked: (until: number) => Effect.Effect<void>
  /**
   * The loop finished a round and waits for `wake` (a queue, a latch), or until `until` at the
   * latest (Clock millis; `Infinity` for no limit).
   */
  readonly waiting: (until: number) => Effect.Effect<void>
  /** The loop woke and works on a round. */
  readonly working: Effect.Effect<void>
  /**
   * Runs `signalling`, the work of another fiber that ends by signalling the loop: the loop
   * counts as working while it runs (the loop says `working` itself once it took the signal).
   */
  readonly wake: <A, E, R>(signalling: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /**
   * Says, before the loop forks it, that `exchange` is under way: work of another fiber that
   * waits for an answer from outside the process (an endpoint's HTTP answer) under a deadline of
   * its own on the clock, and ends by signalling the loop. Answers `exchange` to fork, which
   * reports its end. A test moving the clock waits for it unless the other side holds its answer back.
   */
  readonly exchange: <A, E, R>(exchange: Effect.Effect<A, E, R>) => Effect.Effect<Effect.Effect<A, E, R>>
}

const silent: LoopReport = {
  parked: () => Effect.void,
  waiting: () => Effect.void,
  working: Effect.void,
  wake: (signalling) => signalling,
  exchange: Effect.succeed
}

/**
 * Where the background loops report their rounds. Nothing listens in production; the tests'
 * graph records the reports, so that a test moving its `TestClock` can wait until every loop the
 * move woke has finished its round and rests again (test/support/Advance.ts).
 */
export class LoopRounds extends Context.Tag("Background/LoopRounds")<LoopRounds, {
  /** A loop starts; it reports through the answer until the scope closes. */
  readonly register: (name: string) => Effect.Effect<LoopReport, never, Scope.Scope>
}>() {
  /** Nobody listens: the production graph. */
  static readonly Silent = Layer.succeed(LoopRounds, { register: () => Effect.succeed(silent) })
}

/** The loop the current fiber runs, set by `supervise`: loops report through it without carrying it. */
export class CurrentLoop extends Context.Reference<CurrentLoop>()("Background/CurrentLoop", {
  defaultValue: (): LoopReport => silent
}) {}

/** The current loop finished a round and sleeps until `until`. */
export const parked = (until: number) => Effect.flatMap(CurrentLoop, (loop) => loop.parked(until))

/** The current loop finished a round and waits for a signal, or until `until` at the latest. */
export const waiting = (until: number) => Effect.flatMap(CurrentLoop, (loop) => loop.waiting(until))

/** The current loop woke and works. */
export const working = Effect.flatMap(CurrentLoop, (loop) => loop.working)
