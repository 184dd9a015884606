import { Effect } from "effect"
import { UsageStore } from "./UsageStore.js"

/** The stored usage counters as other features keep them tidy: the respondent limits forget earlier versions' counts. */
export class UsageCounters extends Effect.Service<UsageCounters>()("Quota/UsageCounters", {
  effect: Effect.map(UsageStore, (store) => ({ forget: store.forget }) as const)
}) {}
