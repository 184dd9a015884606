import { Context, Duration, Effect, Layer } from "effect"

/** How long a stopping process waits for the requests and delivery attempts it has in flight. */
export class DrainSettings extends Context.Reference<DrainSettings>()("Background/DrainSettings", {
  defaultValue: () => ({ grace: Duration.seconds(20) })
}) {}

/**
 * The work a process has in flight (requests, delivery attempts), and whether it is stopping.
 * Once draining, the server admits no new request and the delivery worker claims nothing more;
 * what is in flight finishes, for up to the grace period.
 */
export class Drain extends Effect.Service<Drain>()("Background/Drain", {
  effect: Effect.gen(function*() {
    const idle = yield* Effect.makeLatch(true)
    let inFlight = 0
    let draining = false

    /** Runs `effect` as work in flight: a drain waits for it. */
    const track = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      Effect.suspend(() => {
        if (++inFlight === 1) idle.unsafeClose()
        return Effect.ensuring(
          effect,
          Effect.sync(() => {
            if (--inFlight === 0) idle.unsafeOpen()
          })
        )
      })

    /**
     * Stops new work and waits until what is in flight has finished, for at most `grace`;
     * answers how much was still in flight when it stopped waiting.
     */
    const drain = (grace: Duration.Duration) =>
      Effect.gen(function*() {
        draining = true
        if (inFlight > 0) yield* Effect.logInfo("draining").pipe(Effect.annotateLogs({ inFlight }))
        yield* Effect.interruptible(idle.await).pipe(Effect.timeoutOption(grace))
        return inFlight
      })

    return {
      track,
      drain,
      /** True once the process started to stop. */
      isDraining: (): boolean => draining
    } as const
  })
}) {}

/**
 * The process's HTTP listener, which a drained process closes before anything else stops: nothing
 * to close unless the server's layer provides it (src/Http/Server.ts).
 */
export class Listener extends Context.Reference<Listener>()("Background/Listener", {
  defaultValue: () => ({ close: Effect.void })
}) {}

/**
 * Drains when the server stops (SIGTERM, SIGINT): built after the HTTP server and the background
 * work, so its finalizer runs first, while both still run. Drained, it closes the listener: the
 * port refuses connections before the routes and the background work are released, however long
 * that takes, so no request meets a half-stopped process.
 */
export const DrainOnShutdownLive = Layer.scopedDiscard(Effect.gen(function*() {
  const drain = yield* Drain
  const { grace } = yield* DrainSettings
  const listener = yield* Listener
  yield* Effect.addFinalizer(() =>
    Effect.gen(function*() {
      const left = yield* drain.drain(grace)
      yield* left === 0
        ? Effect.logInfo("drained; stopping")
        : Effect.logWarning("stopping with work still in flight").pipe(Effect.annotateLogs({ inFlight: left }))
      yield* listener.close
    })
  )
}))
