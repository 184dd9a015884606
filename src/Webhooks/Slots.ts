/**
 * The delivery worker's attempt slots: how many attempts are in flight over all webhooks and
 * per webhook, and how many finished since the worker last looked. Only the worker's own fibers
 * touch it, between effects, so plain fields are enough.
 */
export class Slots {
  private readonly byWebhook = new Map<string, number>()
  private total = 0
  private finished = 0

  constructor(readonly max: number) {}

  /** Slots left over all webhooks. */
  get free(): number {
    return this.max - this.total
  }

  get inFlight(): number {
    return this.total
  }

  /** Attempts in flight per webhook, as the claim query needs them. */
  get perWebhook(): ReadonlyMap<string, number> {
    return this.byWebhook
  }

  take(webhookId: string): void {
    this.total++
    this.byWebhook.set(webhookId, (this.byWebhook.get(webhookId) ?? 0) + 1)
  }

  release(webhookId: string): void {
    this.total--
    this.finished++
    const left = (this.byWebhook.get(webhookId) ?? 1) - 1
    if (left <= 0) this.byWebhook.delete(webhookId)
    else this.byWebhook.set(webhookId, left)
  }

  /** How many attempts finished since the last call. */
  takeFinished(): number {
    const finished = this.finished
    this.finished = 0
    return finished
  }

  /** How many attempts finished since the last `takeFinished`, without resetting. */
  get finishedSinceRound(): number {
    return this.finished
  }
}
