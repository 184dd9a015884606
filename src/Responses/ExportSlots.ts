import { Effect, type Scope, SubscriptionRef } from "effect"
import { AppConfig } from "../Config.js"
import { ServiceUnavailable } from "../Domain/Errors.js"
import { CsvExportRepo } from "./CsvExportRepo.js"

/** Exports one account streams at once in a process when `EXPORT_CONCURRENCY_PER_ACCOUNT` is not set. */
export const DEFAULT_EXPORT_CONCURRENCY_PER_ACCOUNT = 2

/**
 * The `Retry-After` of a refused export. No export's end can be foreseen, so this is a fixed hint:
 * long enough that a client retrying on it does not spin, short against an export's usual length.
 */
export const EXPORT_RETRY_AFTER_SECONDS = 5

/** The slots held now: by account, and their sum. */
export interface HeldSlots {
  readonly total: number
  readonly byAccount: ReadonlyMap<string, number>
}

const none: HeldSlots = { total: 0, byAccount: new Map() }

const adding = (held: HeldSlots, accountId: string, n: number): HeldSlots => {
  const byAccount = new Map(held.byAccount)
  const count = (byAccount.get(accountId) ?? 0) + n
  if (count === 0) byAccount.delete(accountId)
  else byAccount.set(accountId, count)
  return { total: held.total + n, byAccount }
}

/**
 * How many CSV exports stream at once: at most `EXPORT_CONCURRENCY` in the process, and at most
 * `EXPORT_CONCURRENCY_PER_ACCOUNT` of one account (the key's creator, as the quota counts) in it.
 * Both refusals are 503 `service_unavailable` with `Retry-After`: a 429 would be a request the quota
 * must not count, and the quota has already counted it when the export is refused.
 * Each export reads its pages on a connection of its own (CsvExportRepo), so the bound is also
 * what keeps that connection's queue, or PostgreSQL's export pool, short.
 */
export class ExportSlots extends Effect.Service<ExportSlots>()("Responses/ExportSlots", {
  effect: Effect.gen(function*() {
    const config = yield* AppConfig
    const perProcess = (yield* CsvExportRepo).concurrency
    const perAccount = config.exportConcurrencyPerAccount ?? DEFAULT_EXPORT_CONCURRENCY_PER_ACCOUNT
    const held = yield* SubscriptionRef.make(none)

    const take = (accountId: string) =>
      Effect.flatten(SubscriptionRef.modify(held, (now): [Effect.Effect<void, ServiceUnavailable>, HeldSlots] => {
        if ((now.byAccount.get(accountId) ?? 0) >= perAccount) {
          return [
            Effect.fail(
              new ServiceUnavailable({
                message: `This account already runs ${perAccount} CSV exports; retry once one has finished.`
              })
            ),
            now
          ]
        }
        if (now.total >= perProcess) {
          return [
            Effect.fail(new ServiceUnavailable({ message: "The service runs as many CSV exports as it can; retry shortly." })),
            now
          ]
        }
        return [Effect.void, adding(now, accountId, 1)]
      }))

    /**
     * A slot for one export of `accountId`, held until `scope` closes; refused at once when the
     * account's or the process's slots are all held.
     */
    const hold = (accountId: string): Effect.Effect<void, ServiceUnavailable, Scope.Scope> =>
      Effect.acquireRelease(take(accountId), () => SubscriptionRef.update(held, (now) => adding(now, accountId, -1)))

    return { hold, held } as const
  })
}) {}
