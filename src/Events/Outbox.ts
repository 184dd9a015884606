import { Effect } from "effect"
import { OutboxRepo } from "./OutboxRepo.js"

/**
 * The outbox as other features append to it: each append runs inside the transaction of the
 * change that causes the event (the caller's), so that the change and its event commit together
 * or not at all. It opens no transaction of its own.
 */
export class Outbox extends Effect.Service<Outbox>()("Events/Outbox", {
  effect: Effect.map(OutboxRepo, (repo) => ({
    append: repo.append,
    appendAll: repo.appendAll,
    lockForAppend: repo.lockForAppend
  }) as const)
}) {}
