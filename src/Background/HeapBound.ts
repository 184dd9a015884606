import { fullGC, heapSize } from "bun:jsc"
import { Context, Duration, Effect, Layer, Schedule } from "effect"

/** The JavaScript heap as the bound sees it: its size in bytes, and a full collection answering what it kept. */
export interface Heap {
  readonly size: () => number
  readonly collect: () => number
}

/** JavaScriptCore's heap of this process (`bun:jsc`). */
export const jscHeap: Heap = {
  size: heapSize,
  collect: () => {
    fullGC()
    return heapSize()
  }
}

const MiB = 1024 * 1024

/**
 * How far the serving process lets its JavaScript heap grow past what the last full collection
 * kept before it collects, and how often it looks. Production defaults; tests swap the heap.
 */
export class HeapBoundSettings extends Context.Reference<HeapBoundSettings>()("Background/HeapBoundSettings", {
  defaultValue: () => ({
    every: Duration.millis(100),
    /** The heap may reach `growth` × what the last collection kept... */
    growth: 2,
    /** ...and at least this many bytes before a collection is due. */
    floor: 40 * MiB,
    heap: jscHeap
  })
}) {}

/** The heap size in bytes past which the next full collection is due, given what the last one kept. */
export const limitAfter = (kept: number, settings: { readonly growth: number; readonly floor: number }) =>
  Math.max(settings.floor, kept * settings.growth)

/**
 * Keeps the serving process's JavaScript heap within `growth` × what a full collection keeps (and
 * at least `floor`). Left to its own heuristics, JavaScriptCore lets a busy server's heap reach
 * three to four times that before it runs a full collection: the garbage of the requests in flight
 * at each young-generation collection is promoted and piles up in the old generation. Every
 * `every` this reads the heap's size (a counter) and, past the limit, runs a full collection. That
 * collection is synchronous: the process pauses for it (about 25 ms of CPU at the service's live
 * size of 17 MB), a few times a second at full load (docs/performance-memory.md has the figures).
 */
export const HeapBoundLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const settings = yield* HeapBoundSettings
    let limit = limitAfter(settings.heap.size(), settings)
    const check = Effect.sync(() => {
      if (settings.heap.size() > limit) limit = limitAfter(settings.heap.collect(), settings)
    })
    yield* check.pipe(
      Effect.repeat(Schedule.spaced(settings.every)),
      Effect.withTracerEnabled(false),
      Effect.forkScoped
    )
  })
)
