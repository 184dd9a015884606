import { SqlClient, SqlSchema } from "@effect/sql"
import { Context, Effect, Layer, Schema } from "effect"
import { ServiceUnavailable } from "../Domain/Errors.js"
import { isSqliteBusy } from "../Sql/Busy.js"
import type { StoredUsage } from "./AccountUsage.js"
import { utcDay, utcMonth } from "./Calendar.js"

/** One counted request on its way to the store. */
export interface CountedRequest {
  readonly accountId: string
  readonly at: number
  readonly windowMs: number
}

/** Where the quota counters live between restarts. */
export interface UsageStoreShape {
  /** The counts of the day and month holding `now`, and the requests in the burst window ending at `now`. */
  readonly load: (accountId: string, now: number, windowMs: number) => Effect.Effect<StoredUsage, ServiceUnavailable>
  /** Records a batch of counted requests at once (all or none). */
  readonly record: (batch: ReadonlyArray<CountedRequest>, now: number) => Effect.Effect<void, ServiceUnavailable>
}

export class UsageStore extends Context.Tag("Quota/UsageStore")<UsageStore, UsageStoreShape>() {}

const busyMessage = "The service is busy; nothing changed and the request may be retried."

const PRUNE_EVERY_MS = 10_000

const DayCount = Schema.Struct({ count: Schema.Number })
const BurstRow = Schema.Struct({ atMs: Schema.Number, count: Schema.Number })

const aggregate = (batch: ReadonlyArray<CountedRequest>) => {
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

/** Counters in SQLite: one row per account and UTC day, and the burst window per millisecond. */
export const UsageStoreSql = Layer.effect(
  UsageStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const lastPruned = new Map<string, number>()

    const busyOrDie = <A, R>(effect: Effect.Effect<A, unknown, R>) =>
      Effect.catchAll(effect, (error) =>
        isSqliteBusy(error) ? Effect.fail(new ServiceUnavailable({ message: busyMessage })) : Effect.die(error))

    const dayCount = SqlSchema.findOne({
      Request: Schema.Struct({ accountId: Schema.String, day: Schema.String }),
      Result: DayCount,
      execute: ({ accountId, day }) =>
        sql`SELECT count FROM usage_daily WHERE account_id = ${accountId} AND day = ${day}`
    })
    const monthCount = SqlSchema.single({
      Request: Schema.Struct({ accountId: Schema.String, month: Schema.String }),
      Result: DayCount,
      execute: ({ accountId, month }) =>
        sql`SELECT COALESCE(SUM(count), 0) AS count FROM usage_daily
            WHERE account_id = ${accountId} AND day >= ${`${month}-01`} AND day <= ${`${month}-31`}`
    })
    const burstRows = SqlSchema.findAll({
      Request: Schema.Struct({ accountId: Schema.String, after: Schema.Number }),
      Result: BurstRow,
      execute: ({ accountId, after }) =>
        sql`SELECT at_ms, count FROM usage_burst WHERE account_id = ${accountId} AND at_ms > ${after} ORDER BY at_ms`
    })

    const load = (accountId: string, now: number, windowMs: number) =>
      Effect.gen(function*() {
        const day = utcDay(now)
        const month = utcMonth(now)
        const today = yield* dayCount({ accountId, day })
        const thisMonth = yield* monthCount({ accountId, month })
        const rows = yield* burstRows({ accountId, after: now - windowMs })
        const burst: Array<number> = []
        for (const row of rows) for (let i = 0; i < row.count; i++) burst.push(row.atMs)
        return {
          dayCount: today._tag === "Some" ? today.value.count : 0,
          monthCount: thisMonth.count,
          burst
        } satisfies StoredUsage
      }).pipe(busyOrDie, Effect.withSpan("UsageStore.load"))

    const record = (batch: ReadonlyArray<CountedRequest>, now: number) => {
      const { days, stamps, windows } = aggregate(batch)
      const prune: Array<{ accountId: string; before: number }> = []
      for (const [accountId, windowMs] of windows) {
        if ((lastPruned.get(accountId) ?? Number.NEGATIVE_INFINITY) + PRUNE_EVERY_MS <= now) {
          prune.push({ accountId, before: now - windowMs })
        }
      }
      return Effect.gen(function*() {
        yield* sql`INSERT INTO usage_daily ${sql.insert(days)}
          ON CONFLICT (account_id, day) DO UPDATE SET count = usage_daily.count + excluded.count`
        yield* sql`INSERT INTO usage_burst ${sql.insert(stamps)}
          ON CONFLICT (account_id, at_ms) DO UPDATE SET count = usage_burst.count + excluded.count`
        for (const p of prune) {
          yield* sql`DELETE FROM usage_burst WHERE account_id = ${p.accountId} AND at_ms <= ${p.before}`
        }
      }).pipe(
        sql.withTransaction,
        busyOrDie,
        Effect.tap(() => Effect.sync(() => prune.forEach((p) => lastPruned.set(p.accountId, now))))
      )
    }

    return { load, record }
  })
)

/** Counters in process memory, for tests that need no database; lost when the process ends. */
export const UsageStoreMemory = Layer.sync(UsageStore, () => {
  const daily = new Map<string, number>()
  const burst = new Map<string, Array<number>>()
  return {
    load: (accountId, now, windowMs) =>
      Effect.sync(() => {
        const day = utcDay(now)
        const month = utcMonth(now)
        let monthCount = 0
        for (const [key, count] of daily) {
          if (key.startsWith(`${accountId}\u0000${month}`)) monthCount += count
        }
        return {
          dayCount: daily.get(`${accountId}\u0000${day}`) ?? 0,
          monthCount,
          burst: (burst.get(accountId) ?? []).filter((at) => at > now - windowMs)
        }
      }),
    record: (batch, now) =>
      Effect.sync(() => {
        for (const item of batch) {
          const key = `${item.accountId}\u0000${utcDay(item.at)}`
          daily.set(key, (daily.get(key) ?? 0) + 1)
          const stamps = burst.get(item.accountId) ?? []
          stamps.push(item.at)
          burst.set(item.accountId, stamps)
        }
        const windows = new Map(batch.map((item) => [item.accountId, item.windowMs]))
        for (const [accountId, windowMs] of windows) {
          const stamps = burst.get(accountId)
          if (stamps !== undefined) burst.set(accountId, stamps.filter((at) => at > now - windowMs))
        }
      })
  }
})
