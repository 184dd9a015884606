import { Context, Effect, Layer } from "effect"
import { createHmac, randomBytes } from "node:crypto"

export interface SignInput {
  /** The `whsec_` secrets of the receiving webhook honoured now, newest first. */
  readonly secrets: readonly [string, ...Array<string>]
  readonly eventId: string
  readonly timestampSeconds: number
  readonly body: string
}

/** Creates secrets and signs deliveries. Swappable so another scheme can sign the same deliveries. */
export class Signer extends Context.Tag("Webhooks/Signer")<Signer, {
  readonly newSecret: Effect.Effect<string>
  /** The signature headers of one delivery. */
  readonly sign: (input: SignInput) => Effect.Effect<Readonly<Record<string, string>>>
}>() {
  /**
   * Standard Webhooks (decisions §7): `whsec_` + base64 of 32 random bytes; the HMAC-SHA256 key
   * is those bytes; the signed content is `{id}.{timestamp}.{body}`. During a rotation's overlap
   * one `v1,` signature per secret, separated by spaces, newest first (v1-extensions §X5.2).
   */
  static readonly StandardWebhooks = Layer.succeed(Signer, {
    newSecret: Effect.sync(() => `whsec_${randomBytes(32).toString("base64")}`),
    sign: ({ body, eventId, secrets, timestampSeconds }) =>
      Effect.sync(() => {
        const content = `${eventId}.${timestampSeconds}.${body}`
        const signatures = secrets.map((secret) => {
          const key = Buffer.from(secret.startsWith("whsec_") ? secret.slice(6) : secret, "base64")
          return `v1,${createHmac("sha256", key).update(content).digest("base64")}`
        })
        return {
          "webhook-id": eventId,
          "webhook-timestamp": String(timestampSeconds),
          "webhook-signature": signatures.join(" ")
        }
      })
  })
}
