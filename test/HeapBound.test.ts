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
  const state = { size: 0, keeps: 0, pausedMs: 0 }
  const heap = {
    size: () => {
      Queue.unsafeOffer(readings, state.size)
      return state.size
    },
    collect: () => {
      Queue.unsafeOffer(collections, state.size)
      state.size = state.keeps
      return { kept: state.keeps, pausedMs: state.pausedMs }
    }
  }
  return { heap, readings, collections, state }
})

const MiB = 1024 * 1024
const Sizes = Schema.parseJson(
  Schema.Struct({ before: Schema.Number, peak: Schema.Number, kept: Schema.Number, pausedMs: Schema.Number })
)

const settings = { every: Duration.millis(100), growth: 1.5, floor: 100, share: 0.1 }

/** Moves the clock to the next check and waits until it has read the heap's size. */
const nextCheck = (readings: Queue.Queue<number>) =>
  Effect.zipRight(TestClock.adjust(settings.every), Queue.take(readings))

/**
 * The bound running on a fake heap of 50 bytes, its first two readings taken: one when it starts
 * (the first limit: the floor, 100), one by its first check.
 */
const started = Effect.gen(function*() {
  const fake = yield* fakeHeap
  fake.state.size = 50
  yield* Layer.build(HeapBoundLive).pipe(Effect.provideService(HeapBoundSettings, { ...settings, heap: fake.heap }))
  expect(yield* Queue.take(fake.readings)).toBe(50)
  expect(yield* Queue.take(fake.readings)).toBe(50)
  return fake
})

describe("HeapBound", () => {
  it("the limit is growth × what the last collection kept, and never under the floor", () => {
    expect(limitAfter(40, settings)).toBe(100)
    expect(limitAfter(100, settings)).toBe(150)
    expect(limitAfter(300, settings)).toBe(450)
  })

  it.scoped("collects once the heap passes its limit, then bounds it by what the collection kept", () =>
    Effect.gen(function*() {
      const { collections, readings, state } = yield* started

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

  it.scoped("after a collection that paused the process for d, forces none for d / share", () =>
    Effect.gen(function*() {
      const { collections, readings, state } = yield* started

      // A collection that paused for 15 ms: with a share of 0.1, none before 150 ms have passed.
      state.size = 500
      state.keeps = 500
      state.pausedMs = 15
      expect(yield* nextCheck(readings)).toBe(500)
      expect(yield* Queue.take(collections)).toBe(500)
      state.size = 2_000
      // The check 100 ms later does not look; the one 200 ms later does, and collects.
      yield* TestClock.adjust(settings.every)
      expect(yield* nextCheck(readings)).toBe(2_000)
      expect(yield* Queue.size(readings)).toBe(0)
      expect(yield* Queue.take(collections)).toBe(2_000)
    }))

  // In a process of its own: the test runner's worker holds a heap of its own making.
  it("reads JavaScriptCore's heap as its last collection left it, and its full collection frees what nothing holds", () => {
    const script = `
      import { jscHeap } from ${JSON.stringify(join(import.meta.dirname, "..", "src", "Background", "HeapBound.ts"))}
      // About 10 MB of objects, held across a collection and unreachable once this returns.
      const sizeWhileHolding = () => {
        const held = Array.from({ length: 200_000 }, (_, i) => ({ i, text: "garbage " + i }))
        Bun.gc(true)
        return jscHeap.size() + held.length - held.length
      }
      const before = jscHeap.collect().kept
      const peak = sizeWhileHolding()
      const { kept, pausedMs } = jscHeap.collect()
      console.log(JSON.stringify({ before, peak, kept, pausedMs }))
    `
    const run = Bun.spawnSync([process.execPath, "-e", script], { stdout: "pipe", stderr: "pipe" })
    expect(run.stderr.toString()).toBe("")
    const { before, kept, pausedMs, peak } = Schema.decodeUnknownSync(Sizes)(run.stdout.toString())
    expect(peak).toBeGreaterThan(before + 5 * MiB)
    expect(kept).toBeLessThan(peak - 5 * MiB)
    expect(pausedMs).toBeGreaterThan(0)
  })
})
