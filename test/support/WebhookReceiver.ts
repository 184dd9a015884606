import { Effect, Stream, SubscriptionRef } from "effect"
import { holder } from "./Advance.js"

/** One request as a webhook receiver saw it. */
export interface Received {
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
  readonly host: string
}

export interface Receiver {
  readonly url: string
  readonly port: number
  readonly received: Effect.Effect<ReadonlyArray<Received>>
  /** Waits until at least `count` requests have arrived (a signal, not a poll); answers all of them. */
  readonly receivedAtLeast: (count: number) => Effect.Effect<ReadonlyArray<Received>>
  /** Waits until the requests that have arrived satisfy `check` (a signal, not a poll); answers all of them. */
  readonly receivedWhere: (check: (all: ReadonlyArray<Received>) => boolean) => Effect.Effect<ReadonlyArray<Received>>
}

/**
 * A real HTTP receiver on 127.0.0.1 that records every request and answers with `answer`
 * (200 by default). Stopped when the scope closes. While `answer` is an unsettled promise the
 * receiver holds the request (an endpoint that hangs, or answers when the test says so), and
 * `advance` may move the clock past the attempt's timeout; any other answer is on its way, and
 * `advance` waits for the attempt to take it (test/support/Advance.ts).
 */
export const receiver = (
  answer: (request: Request) => Response | Promise<Response> = () => new Response("ok"),
  options: { readonly tls?: { readonly cert: string; readonly key: string } } = {}
) =>
  Effect.gen(function*() {
    const log: Array<Received> = []
    const arrived = yield* SubscriptionRef.make(0)
    const { hold } = yield* holder
    const server = yield* Effect.acquireRelease(
      Effect.sync(() =>
        Bun.serve({
          hostname: "127.0.0.1",
          port: 0,
          idleTimeout: 0,
          ...(options.tls === undefined ? {} : { tls: options.tls }),
          async fetch(request) {
            const body = await request.text()
            const headers = Object.fromEntries(request.headers.entries())
            log.push({ headers, body, host: headers["host"] ?? "" })
            Effect.runSync(SubscriptionRef.set(arrived, log.length))
            const answered = answer(request)
            return answered instanceof Promise ? hold(request, answered) : answered
          }
        })
      ),
      (server) => Effect.promise(() => server.stop(true))
    )
    const scheme = options.tls === undefined ? "http" : "https"
    const receivedWhere = (check: (all: ReadonlyArray<Received>) => boolean) =>
      arrived.changes.pipe(
        Stream.takeUntil(() => check([...log])),
        Stream.runDrain,
        Effect.zipRight(Effect.sync((): ReadonlyArray<Received> => [...log]))
      )
    return {
      url: `${scheme}://127.0.0.1:${server.port}/hook`,
      port: server.port ?? 0,
      received: Effect.sync((): ReadonlyArray<Received> => [...log]),
      receivedAtLeast: (count) => receivedWhere((all) => all.length >= count),
      receivedWhere
    } satisfies Receiver
  })

/**
 * Waits in real time until `check` holds; fails the test otherwise. Bounded at 30 s by default: the
 * bound only decides how long a failing test takes, and on a loaded machine a worker round may
 * take seconds to get its turn.
 */
export const eventually = <A, R>(
  probe: Effect.Effect<A, never, R>,
  check: (value: A) => boolean,
  options: { readonly tries?: number; readonly everyMillis?: number } = {}
) =>
  Effect.gen(function*() {
    const tries = options.tries ?? 3000
    let last = yield* probe
    for (let i = 0; i < tries && !check(last); i++) {
      yield* Effect.promise(() => Bun.sleep(options.everyMillis ?? 10))
      last = yield* probe
    }
    if (!check(last)) return yield* Effect.dieMessage(`condition not reached; last value: ${JSON.stringify(last)}`)
    return last
  })
