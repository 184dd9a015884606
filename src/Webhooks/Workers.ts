import { Layer } from "effect"
import { DeliveryRepo } from "./DeliveryRepo.js"
import { DeliveryWorkerLive } from "./DeliveryWorker.js"
import { PurgeLive } from "./Purge.js"
import { Signer } from "./Signer.js"
import { WebhookRepo } from "./WebhookRepo.js"

/** The webhook background work: delivery and the attempt-log purge. Needs the database and `AppConfig`. */
export const WebhookWorkers = (signer: Layer.Layer<Signer> = Signer.StandardWebhooks) =>
  Layer.mergeAll(DeliveryWorkerLive, PurgeLive).pipe(
    Layer.provide(Layer.mergeAll(DeliveryRepo.Default, WebhookRepo.Default, signer))
  )

export const WebhookWorkersLive = WebhookWorkers()
