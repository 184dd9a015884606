import { Context, Effect, Layer, type Scope } from "effect"
import { AppConfig } from "../Config.js"
import type { ServiceUnavailable } from "../Domain/Errors.js"
import { SqlDialect } from "../Sql/Dialect.js"
import { busyTimeoutMs } from "../Sql/Sqlite.js"
import type { StoredUsage } from "./AccountUsage.js"
import { makePgUsageStore } from "./PgUsageStore.js"
import { makeQuotaFileStore } from "./QuotaFileStore.js"

/** One counted request on its way to the store. */
export interface CountedRequest {
  readonly accountId: string
  readonly at: number
  readonly windowMs: number
}

/** An account a batch of requests is decided for. */
export interface BatchAccount {
  readonly accountId: string
  readonly windowMs: number
}

/**
 * Decides a batch inside the store's transaction. `current(accountId, dayCount)` tells, from the
 * locked count of the account's UTC day, whether the counters held in memory are still exact;
 * `decide` gets the stored counters of the accounts that are not (only those) and answers the
 * requests it admitted, which the store records before the transaction commits.
 */
export interface Decider {
  readonly current: (accountId: string, dayCount: number) => boolean
  readonly decide: (reloaded: ReadonlyMap<string, StoredUsage>) => ReadonlyArray<CountedRequest>
}

/** What GET /usage reports of an account, as stored. */
export interface UsageCounts {
  readonly today: number
  readonly thisMonth: number
  readonly inBurst: number
}

/** Where the quota counters live, shared by every process on the database. */
export interface UsageStoreShape {
  /** The stored count of the UTC day holding `now` (0 when nothing was counted). One indexed read. */
  readonly dayCount: (accountId: string, now: number) => Effect.Effect<number, ServiceUnavailable>
  /** The counts of the day and month holding `now`, and the requests in the burst window ending at `now`. */
  readonly counts: (accountId: string, now: number, windowMs: number) => Effect.Effect<UsageCounts, ServiceUnavailable>
  /**
   * One transaction holding each account's day row locked (on SQLite, the database's write lock)
   * while `decider` decides and its admitted requests are recorded: no other process decides for
   * these accounts meanwhile. Fails with 503 when the store stays busy; then nothing was written.
   */
  readonly settle: (now: number, accounts: ReadonlyArray<BatchAccount>, decider: Decider) => Effect.Effect<void, ServiceUnavailable>
  /**
   * Deletes the counters of the ids starting with `prefix` that no longer count: days before the
   * one holding `now`, stamps at or before `burstBefore`. Answers how many rows went.
   */
  readonly forget: (prefix: string, now: number, burstBefore: number) => Effect.Effect<number, ServiceUnavailable>
}

export class UsageStore extends Context.Tag("Quota/UsageStore")<UsageStore, UsageStoreShape>() {}

type QuotaFileError = Effect.Effect.Error<ReturnType<typeof makeQuotaFileStore>>

/**
 * The counters: on SQLite in the quota file beside the service's file (src/Quota/QuotaFileStore.ts;
 * at start it takes over what an earlier version counted in the main file since), in memory beside
 * an in-memory database; on PostgreSQL in the service's database (src/Quota/PgUsageStore.ts).
 */
export const UsageStoreLive = Layer.scoped(
  UsageStore,
  Effect.flatMap(SqlDialect, (dialect) =>
    dialect.choose<Effect.Effect<UsageStoreShape, QuotaFileError, Effect.Effect.Context<typeof makePgUsageStore> | AppConfig | Scope.Scope>>({
      sqlite: () => Effect.flatMap(AppConfig, (config) => makeQuotaFileStore(busyTimeoutMs(config))),
      pg: () => makePgUsageStore
    }))
)
