import { Effect } from "effect"
import { realTimeMillis } from "../Background/RealTime.js"
import { AppConfig } from "../Config.js"
import { DeliverySettings } from "./DeliverySettings.js"
import { send } from "./Sender.js"
import { Signer } from "./Signer.js"

/**
 * Signs and sends one event body to one endpoint (decisions §7): Standard Webhooks headers,
 * `x-service-event-id`, and the URL policy applied again at the moment of sending. Used by the
 * delivery worker and by `POST /webhooks/test` alike.
 */
export const attemptOnce = Effect.fn("Webhooks.attemptOnce")(function*(input: {
  readonly targetUrl: string
  /** The webhook's secrets honoured now, newest first: one signature each. */
  readonly secrets: readonly [string, ...Array<string>]
  readonly eventId: string
  readonly body: string
}) {
  const signer = yield* Signer
  const config = yield* AppConfig
  const settings = yield* DeliverySettings
  // The receiver checks the timestamp against its own clock: the wire's time, real on a simulated clock.
  const now = yield* realTimeMillis
  const signature = yield* signer.sign({
    secrets: input.secrets,
    eventId: input.eventId,
    timestampSeconds: Math.floor(now / 1000),
    body: input.body
  })
  return yield* send({
    targetUrl: input.targetUrl,
    body: input.body,
    headers: {
      ...signature,
      "content-type": "application/json",
      "user-agent": "survey-service-webhooks/1",
      "x-service-event-id": input.eventId
    },
    allowPrivate: config.webhookAllowPrivateTargets,
    timeout: settings.attemptTimeout
  })
})
