import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Layer, Option, Queue, Schema, TestClock } from "effect"
import { join } from "node:path"
import { HeapBoundLive, HeapBoundSettings, limitAfter } from "../src/Background/HeapBound.js"

/**
 * A heap whose size the test sets. Every reading of its size is offered to `readings` (the
 * bound's check ran), every collection to `collections` with the size it found.
 */
const fakeHeap = Effect.gen(function*() {
  const readings = yield* Queue.unbounded<number>()
  const collections = yield* Queue.unbounded<number>()
  const state = { size: 0, keeps: 0 }
  const heap = {
    size: () => {
      Queue.unsafeOffer(readings, state.size)
      return state.size
    },
    collect: () => {
      Queue.unsafeOffer(collections, state.size)
      state.size = state.keeps
      return state.keeps
    }
  }
  return { heap, readings, collections, state }
})

const MiB = 1024 * 1024
const Sizes = Schema.parseJson(Schema.Struct({ before: Schema.Number, peak: Schema.Number, kept: Schema.Number }))

const settings = { every: Duration.millis(100), growth: 1.5, floor: 100 }

/** Moves the clock to the next check and waits until it has read the heap's size. */
const nextCheck = (readings: Queue.Queue<number>) =>
  Effect.zipRight(TestClock.adjust(settings.every), Queue.take(readings))

describe("HeapBound", () => {
  it("the limit is growth × what the last collection kept, and never under the floor", () => {
    expect(limitAfter(40, settings)).toBe(100)
    expect(limitAfter(100, settings)).toBe(150)
    expect(limitAfter(300, settings)).toBe(450)
  })

  it.scoped("collects once the heap passes its limit, then bounds it by what the collection kept", () =>
    Effect.gen(function*() {
      const { collections, heap, readings, state } = yield* fakeHeap
      state.size = 50
      yield* Layer.build(HeapBoundLive).pipe(Effect.provideService(HeapBoundSettings, { ...settings, heap }))
      // One reading when it starts (the first limit: the floor, 100), one by the first check.
      expect(yield* Queue.take(readings)).toBe(50)
      expect(yield* Queue.take(readings)).toBe(50)

      /**
       * The heap at `size` (and keeping `keeps` through a collection): moves to the next check,
       * waits until it has read the size, and answers the size it collected at, if it did.
       */
      const checkAt = (size: number, keeps: number) =>
        Effect.gen(function*() {
          state.size = size
          state.keeps = keeps
          expect(yield* nextCheck(readings)).toBe(size)
          return yield* Queue.poll(collections)
        })

      expect(yield* checkAt(100, 0)).toEqual(Option.none())
      // Past the floor: a full collection, which keeps 120; the next limit is 180.
      expect(yield* checkAt(101, 120)).toEqual(Option.some(101))
      expect(yield* checkAt(180, 120)).toEqual(Option.none())
      expect(yield* checkAt(181, 30)).toEqual(Option.some(181))
      // What the collection kept is small again: the floor is the limit.
      expect(yield* checkAt(101, 30)).toEqual(Option.some(101))
    }))

  // In a process of its own: the test runner's worker holds a heap of its own making.
  it("reads JavaScriptCore's heap, and its full collection frees what nothing holds", () => {
    const script = `
      import { jscHeap } from ${JSON.stringify(join(import.meta.dirname, "..", "src", "Background", "HeapBound.ts"))}
      // About 10 MB of objects, held while the heap is measured and unreachable once this returns.
      const sizeWhileHolding = () => {
        const held = Array.from({ length: 200_000 }, (_, i) => ({ i, text: "garbage " + i }))
        return jscHeap.size() + held.length - held.length
      }
      const before = jscHeap.collect()
      const peak = sizeWhileHolding()
      const kept = jscHeap.collect()
      console.log(JSON.stringify({ before, peak, kept }))
    `
    const run = Bun.spawnSync([process.execPath, "-e", script], { stdout: "pipe", stderr: "pipe" })
    expect(run.stderr.toString()).toBe("")
    const { before, kept, peak } = Schema.decodeUnknownSync(Sizes)(run.stdout.toString())
    expect(peak).toBeGreaterThan(before + 5 * MiB)
    expect(kept).toBeLessThan(peak - 5 * MiB)
  })
})
