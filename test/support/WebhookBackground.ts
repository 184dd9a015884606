import { Layer } from "effect"
import { DeliveryWorkerLive } from "../../src/Webhooks/DeliveryWorker.js"
import { PurgeLive } from "../../src/Webhooks/Purge.js"

/** Only the webhook delivery worker and its attempt purge: for tests and benchmarks of webhooks alone. */
export const WebhookBackgroundLive = Layer.mergeAll(DeliveryWorkerLive, PurgeLive)
