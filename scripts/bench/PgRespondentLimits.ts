/**
 * The respondent limits of the raw completions baseline (scripts/bench/pgCompletionsBaseline.ts),
 * counted as the service counts them (src/Respondents/RespondentLimits.ts): so many requests per
 * client address and per survey in any minute, in the request quota's tables `usage_daily` and
 * `usage_burst`, under the service's counter ids (`respondent-address:…`, `respondent-survey:…`).
 *
 * Decided as the service's limiter decides (src/Quota/Batching.ts over src/Quota/PgUsageStore.ts):
 *
 * - The counts asked for while a batch is open are decided together in one transaction, one batch
 *   of a process at a time (scripts/bench/BatchQueue.ts). Each count is answered once its batch
 *   has committed.
 * - Requests are counted at the start of their second.
 * - The transaction locks every counter's day row in one statement, in counter order. The
 *   counters in memory are used when the locked count is the one this process last stored; the
 *   others are read again in one statement (month and burst window; the day is the locked count).
 * - The admitted counts go to both tables in one statement; a counter's stamps older than its
 *   window are deleted at most every 10 s (src/Quota/UsageRows.ts decides which, as for the
 *   service).
 * - At most 10,000 counters stay in memory; a batch that fails forgets its counters.
 */
import type * as Pg from "pg"
import type { QuotaPlan } from "../../src/Auth/CurrentKey.js"
import { AccountUsage, burstWindowMs, type Decision } from "../../src/Quota/AccountUsage.js"
import { utcDay, utcMonth } from "../../src/Quota/Calendar.js"
import { aggregate, pruning, storedUsages } from "../../src/Quota/UsageRows.js"
import { perMinute } from "../../src/Respondents/RespondentLimits.js"
import type { CountedRequest } from "../../src/Quota/UsageStore.js"
import { makeBatchQueue, type Waiting } from "./BatchQueue.js"

/** Runs a statement on a connection; rows as arrays. */
export type Run = (on: Pg.PoolClient, text: string, values: ReadonlyArray<unknown>) => Promise<ReadonlyArray<ReadonlyArray<unknown>>>

const STEP_MS = 1000
const MAX_KNOWN = 10_000

const lockDaysSql = `INSERT INTO usage_daily (account_id, day, count)
  SELECT a, $2, 0 FROM unnest($1::text[]) AS a ORDER BY a COLLATE "C"
  ON CONFLICT (account_id, day) DO UPDATE SET count = usage_daily.count
  RETURNING account_id, count`
const reloadSql = `SELECT w.a, -1, COALESCE(SUM(d.count), 0) FROM unnest($1::text[]) AS w(a)
    LEFT JOIN usage_daily d ON d.account_id = w.a AND d.day >= $3 AND d.day <= $4 GROUP BY w.a
  UNION ALL
  SELECT b.account_id, b.at_ms, b.count FROM unnest($1::text[], $2::int8[]) AS w(a, after)
    JOIN usage_burst b ON b.account_id = w.a AND b.at_ms > w.after
  ORDER BY 1, 2`
const addSql = `WITH added AS (
    INSERT INTO usage_daily (account_id, day, count)
    SELECT * FROM unnest($1::text[], $2::text[], $3::int8[])
    ON CONFLICT (account_id, day) DO UPDATE SET count = usage_daily.count + excluded.count
  )
  INSERT INTO usage_burst (account_id, at_ms, count)
  SELECT * FROM unnest($4::text[], $5::int8[], $6::int8[])
  ON CONFLICT (account_id, at_ms) DO UPDATE SET count = usage_burst.count + excluded.count`
const pruneSql = `DELETE FROM usage_burst b USING unnest($1::text[], $2::int8[]) AS p(a, before)
  WHERE b.account_id = p.a AND b.at_ms <= p.before`

/** A whole number from an integer column, whichever width (the driver answers 8-byte ones as text). */
const whole = (value: unknown): number => {
  const n = typeof value === "number" ? value : typeof value === "string" && /^-?\d+$/.test(value) ? Number(value) : Number.NaN
  if (!Number.isSafeInteger(n)) throw new Error(`expected a whole number, got ${String(value)}`)
  return n
}

/** A count asked for, waiting for its batch. */
type Count = Waiting<{ readonly accountId: string; readonly plan: QuotaPlan }, Decision>

export const makeRespondentLimits = (pool: Pg.Pool, run: Run, limits: { readonly perAddress: number; readonly perSurvey: number }) => {
  const addressPlan = perMinute(limits.perAddress)
  const surveyPlan = perMinute(limits.perSurvey)
  const known = new Map<string, { readonly usage: AccountUsage; readonly day: string }>()
  const lastPruned = new Map<string, number>()

  /** The counters of `stale` as stored, in one statement; `today` holds their locked day counts. */
  const reload = async (client: Pg.PoolClient, stale: ReadonlyArray<readonly [string, QuotaPlan]>, now: number, today: ReadonlyMap<string, number>) => {
    const month = utcMonth(now)
    const rows = await run(client, reloadSql, [
      stale.map(([accountId]) => accountId),
      stale.map(([, plan]) => now - burstWindowMs(plan)),
      `${month}-01`,
      `${month}-31`
    ])
    const stored = storedUsages(
      stale.map(([accountId]) => accountId),
      today,
      rows.map((row) => ({ accountId: String(row[0]), atMs: whole(row[1]), count: whole(row[2]) }))
    )
    return [...stored].map(([accountId, usage]) => [accountId, new AccountUsage(usage, now)] as const)
  }

  const settle = async (counts: ReadonlyArray<Count>) => {
    const clock = Date.now()
    const now = clock - (clock % STEP_MS)
    const day = utcDay(now)
    const plans = new Map(counts.map((c) => [c.accountId, c.plan]))
    const synced = new Map<string, AccountUsage>()
    let client: Pg.PoolClient | undefined
    try {
      client = await pool.connect()
      await client.query("BEGIN")
      // In one order in every process, as the service locks them: no two batches deadlock.
      const locked = await run(client, lockDaysSql, [[...plans.keys()], day])
      const today = new Map(locked.map((row) => [String(row[0]), whole(row[1])]))
      const stale: Array<readonly [string, QuotaPlan]> = []
      for (const [accountId, plan] of plans) {
        const cached = known.get(accountId)
        if (cached !== undefined && cached.day === day && cached.usage.current(now, plan).today === today.get(accountId)) {
          synced.set(accountId, cached.usage)
        } else stale.push([accountId, plan])
      }
      if (stale.length > 0) for (const [accountId, usage] of await reload(client, stale, now, today)) synced.set(accountId, usage)
      const admitted: Array<CountedRequest> = []
      const decided = counts.map((c) => {
        const usage = synced.get(c.accountId)
        if (usage === undefined) throw new Error(`no counters for ${c.accountId}`)
        const decision = usage.take(now, c.plan)
        if (decision._tag === "Admitted") admitted.push({ accountId: c.accountId, at: now, windowMs: burstWindowMs(c.plan) })
        return { count: c, decision }
      })
      const { days, stamps, windows } = aggregate(admitted)
      const prune = pruning(lastPruned, windows, now)
      if (days.length > 0) {
        await run(client, addSql, [
          days.map((d) => d.accountId),
          days.map((d) => d.day),
          days.map((d) => d.count),
          stamps.map((s) => s.accountId),
          stamps.map((s) => s.atMs),
          stamps.map((s) => s.count)
        ])
      }
      if (prune.length > 0) await run(client, pruneSql, [prune.map((p) => p.accountId), prune.map((p) => p.before)])
      await client.query("COMMIT")
      for (const p of prune) lastPruned.set(p.accountId, now)
      for (const [accountId, usage] of synced) known.set(accountId, { usage, day })
      for (const accountId of known.keys()) {
        if (known.size <= MAX_KNOWN) break
        known.delete(accountId)
      }
      for (const { count, decision } of decided) count.resolve(decision)
    } catch (cause) {
      await client?.query("ROLLBACK").catch(() => undefined)
      for (const c of counts) known.delete(c.accountId)
      for (const c of counts) c.reject(cause)
    } finally {
      client?.release()
    }
  }

  const decide = makeBatchQueue<{ readonly accountId: string; readonly plan: QuotaPlan }, Decision>(settle)

  return {
    /** Counts a request against its client address (src/Respondents/RespondentLimits.ts, `addressKey`). */
    address: (address: string) => decide({ accountId: `respondent-address:${address}`, plan: addressPlan }),
    /** Counts a request against its survey. */
    survey: (surveyId: string) => decide({ accountId: `respondent-survey:${surveyId}`, plan: surveyPlan })
  } as const
}
