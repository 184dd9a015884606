import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber } from "effect"
import { advance, exchangeAwaited } from "./support/Advance.js"
import { eventually, receiver } from "./support/WebhookReceiver.js"
import { complete, deliveries, loggedAttempts, register, WebhookWorld } from "./support/WebhookWorld.js"

describe("advance and the attempts in flight", () => {
  it.effect("does not move the clock to an attempt's timeout while the receiver's answer is on its way", () =>
    Effect.gen(function*() {
      // The receiver answers at once, but its answer ends only when the test says so: until then
      // the attempt is in flight with nobody holding its request, as a prompt answer in transit is.
      const open = new Set<ReadableStreamDefaultController<Uint8Array>>()
      const answered = yield* Deferred.make<void>()
      const target = yield* receiver(() => {
        let answer: ReadableStreamDefaultController<Uint8Array> | undefined
        return new Response(
          new ReadableStream<Uint8Array>({
            start: (controller) => {
              answer = controller
              open.add(controller)
              controller.enqueue(new TextEncoder().encode("o"))
              Deferred.unsafeDone(answered, Exit.void)
            },
            // The attempt gave up on it (timed out): there is nothing left to end.
            cancel: () => {
              if (answer !== undefined) open.delete(answer)
            }
          })
        )
      })
      yield* register(target.url)
      yield* complete("srv_main")
      const advancing = yield* Effect.fork(advance("20 seconds"))
      yield* Deferred.await(answered)
      // The answer ends once `advance` waits for it, or (were `advance` to pass the attempt's
      // 15 s timeout meanwhile) once it is done with the 20 s.
      yield* Effect.raceFirst(exchangeAwaited, Fiber.await(advancing))
      for (const answer of open) answer.close()
      yield* Fiber.join(advancing)
      yield* eventually(deliveries, (all) => all.every((d) => d.leaseUntil === 0))
      expect(yield* loggedAttempts).toMatchObject([{ ok: 1, responseStatus: 200, error: null }])
      expect(yield* target.received).toHaveLength(1)
    }).pipe(Effect.provide(WebhookWorld()), Effect.scoped))
})
