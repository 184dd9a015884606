import { ServiceUnavailable } from "../Domain/Errors.js"
import type { StoredUsage } from "./AccountUsage.js"
import { utcDay } from "./Calendar.js"
import type { CountedRequest } from "./UsageStore.js"

/** What a store answers when it stays busy past its timeout: nothing was written. */
export const storeBusy = () => new ServiceUnavailable({ message: "The service is busy; nothing changed and the request may be retried." })

const PRUNE_EVERY_MS = 10_000

/** The rows a batch adds: per account and UTC day, per account and millisecond. */
export const aggregate = (batch: ReadonlyArray<CountedRequest>) => {
  const days = new Map<string, { accountId: string; day: string; count: number }>()
  const stamps = new Map<string, { accountId: string; atMs: number; count: number }>()
  const windows = new Map<string, number>()
  for (const item of batch) {
    const day = utcDay(item.at)
    const dayKey = `${item.accountId}\u0000${day}`
    const dayRow = days.get(dayKey)
    if (dayRow === undefined) days.set(dayKey, { accountId: item.accountId, day, count: 1 })
    else dayRow.count += 1
    const stampKey = `${item.accountId}\u0000${item.at}`
    const stampRow = stamps.get(stampKey)
    if (stampRow === undefined) stamps.set(stampKey, { accountId: item.accountId, atMs: item.at, count: 1 })
    else stampRow.count += 1
    windows.set(item.accountId, item.windowMs)
  }
  return { days: [...days.values()], stamps: [...stamps.values()], windows }
}

/** The accounts whose burst rows older than their window are due to be deleted (at most every 10 s each). */
export const pruning = (lastPruned: ReadonlyMap<string, number>, windows: ReadonlyMap<string, number>, now: number) => {
  const prune: Array<{ accountId: string; before: number }> = []
  for (const [accountId, windowMs] of windows) {
    if ((lastPruned.get(accountId) ?? Number.NEGATIVE_INFINITY) + PRUNE_EVERY_MS <= now) {
      prune.push({ accountId, before: now - windowMs })
    }
  }
  return prune
}

/** An account's counters as read from a store: the burst rows' stamps each repeated by its count. */
export const storedUsage = (
  dayCount: number,
  monthCount: number,
  rows: ReadonlyArray<{ readonly atMs: number; readonly count: number }>
): StoredUsage => {
  const burst: Array<number> = []
  for (const row of rows) for (let i = 0; i < row.count; i++) burst.push(row.atMs)
  return { dayCount, monthCount, burst }
}

/** A row of a batch's read of stored counters: an account's month sum (`atMs` -1) or one of its burst stamps. */
export interface StoredRow {
  readonly accountId: string
  readonly atMs: number
  readonly count: number
}

/**
 * The counters of `accountIds` from one read of their stored rows (each account's month sum as
 * `atMs` -1, its stamps in order), with today's counts as the batch's locks of their day rows
 * answered them. An account with no rows has counted nothing.
 */
export const storedUsages = (
  accountIds: ReadonlyArray<string>,
  today: ReadonlyMap<string, number>,
  rows: Iterable<StoredRow>
): ReadonlyMap<string, StoredUsage> => {
  const months = new Map<string, number>()
  const stamps = new Map<string, Array<StoredRow>>()
  for (const row of rows) {
    if (row.atMs === -1) months.set(row.accountId, row.count)
    else {
      const list = stamps.get(row.accountId)
      if (list === undefined) stamps.set(row.accountId, [row])
      else list.push(row)
    }
  }
  return new Map(accountIds.map((id) => [id, storedUsage(today.get(id) ?? 0, months.get(id) ?? 0, stamps.get(id) ?? [])]))
}
