import { fullGC } from "bun:jsc"
import { Context, Duration, Effect, Layer, Schedule } from "effect"
import { realTimeMillis } from "./RealTime.js"

/** The JavaScript heap as the bound sees it. */
export interface Heap {
  /** Its size in bytes. */
  readonly size: () => number
  /** A full collection: what it kept, in bytes, and how long it paused the process, in milliseconds. */
  readonly collect: () => { readonly kept: number; readonly pausedMs: number }
}

/**
 * The heap's size as JavaScriptCore last measured it (`process.memoryUsage().heapUsed`, which
 * changes at each collection, young-generation ones included).
 *
 * Measured shortcut: this reading skips `heapSize()` of `bun:jsc`, which counts the heap anew on
 * each call. Under load collections come many times a second, so the two differ by at most one
 * collection (test/HeapBound.test.ts). Measurement: docs/performance.md#measured-shortcuts, "Heap
 * bound".
 */
const heapUsed = () => process.memoryUsage().heapUsed

/** JavaScriptCore's heap of this process (`bun:jsc`). */
export const jscHeap: Heap = {
  size: heapUsed,
  collect: () => {
    const start = performance.now()
    fullGC()
    return { kept: heapUsed(), pausedMs: performance.now() - start }
  }
}

const MiB = 1024 * 1024

/**
 * How far the serving process lets its JavaScript heap grow past what the last full collection
 * kept before it collects, how often it looks, and how much of its time the collections it
 * forces may take. Production defaults; tests swap the heap.
 */
export class HeapBoundSettings extends Context.Reference<HeapBoundSettings>()("Background/HeapBoundSettings", {
  defaultValue: () => ({
    every: Duration.millis(100),
    /** The heap may reach `growth` × what the last collection kept... */
    growth: 2,
    /** ...and at least this many bytes before a collection is due. */
    floor: 40 * MiB,
    /** After a collection that paused the process for d, none is forced for d / share. */
    share: 0.05,
    heap: jscHeap
  })
}) {}

/** The heap size in bytes past which the next full collection is due, given what the last one kept. */
export const limitAfter = (kept: number, settings: { readonly growth: number; readonly floor: number }) =>
  Math.max(settings.floor, kept * settings.growth)

/**
 * Keeps the serving process's JavaScript heap within `growth` × what a full collection keeps (and
 * at least `floor`). Every `every` this reads the heap's size as of its last collection and, past
 * the limit, runs a full collection. That collection is synchronous: the process pauses for it.
 * So that the pauses cannot take more than `share` of the process's time (on a machine short of
 * CPU a pause lasts longer), the next one waits `pause / share`; in between, JavaScriptCore's own
 * collections still run (docs/architecture.md#heap-bound).
 *
 * Measured shortcut: full collections forced past the bound, skipping JavaScriptCore's own
 * heuristics, which let a busy server's heap run far past its live size before a full collection
 * (the garbage of the requests in flight at each young-generation collection is promoted and piles
 * up in the old generation). test/HeapBound.test.ts holds the bound and the pauses' share.
 * Measurement: docs/performance.md#measured-shortcuts, "Heap bound".
 */
export const HeapBoundLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const settings = yield* HeapBoundSettings
    let limit = limitAfter(settings.heap.size(), settings)
    let quietUntil = 0
    const check = Effect.flatMap(realTimeMillis, (now) =>
      Effect.sync(() => {
        if (now < quietUntil || settings.heap.size() <= limit) return
        const { kept, pausedMs } = settings.heap.collect()
        limit = limitAfter(kept, settings)
        quietUntil = now + pausedMs / settings.share
      }))
    yield* check.pipe(
      Effect.repeat(Schedule.spaced(settings.every)),
      Effect.withTracerEnabled(false),
      Effect.forkScoped
    )
  })
)
