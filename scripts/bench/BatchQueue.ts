/**
 * How the raw baselines batch their counts, as the service's limiters do (src/Quota/Batching.ts):
 * the items that arrive while a batch is open are stored together, one batch of a process at a
 * time. A batch closes on the event-loop turn after its first item, or later, once the batch
 * before it is stored.
 */

/** An item waiting in a batch, with what answers it once the batch is stored. */
export type Waiting<Item extends object, Result> = Item & {
  readonly resolve: (result: Result) => void
  readonly reject: (cause: unknown) => void
}

/**
 * A queue whose batches `settle` stores, in arrival order; `settle` answers each item of its batch.
 * Answers `join`: an item's result, once its batch is stored.
 */
export const makeBatchQueue = <Item extends object, Result>(
  settle: (batch: ReadonlyArray<Waiting<Item, Result>>) => Promise<void>
) => {
  interface Batch {
    readonly waiting: Array<Waiting<Item, Result>>
    /** Its event-loop turn came: it starts once the batch before it is stored. */
    due: boolean
  }
  /** The batch still taking items: the next one stored. */
  let open: Batch | undefined
  /** A batch is being stored (at most one at a time). */
  let settling = false

  /** Stores `batch`, then the batch whose turn came meanwhile, if any. */
  const start = (batch: Batch) => {
    if (open === batch) open = undefined
    settling = true
    void settle(batch.waiting).finally(() => {
      settling = false
      if (open !== undefined && open.due) start(open)
    })
  }

  return (item: Item) =>
    new Promise<Result>((resolve, reject) => {
      let batch = open
      if (batch === undefined) {
        const opened: Batch = { waiting: [], due: false }
        setImmediate(() => {
          opened.due = true
          if (!settling) start(opened)
        })
        open = batch = opened
      }
      batch.waiting.push({ ...item, resolve, reject })
    })
}
