import { Headers } from "@effect/platform"
import { Layer, type Tracer } from "effect"

/**
 * The request headers recorded redacted in spans: the platform's (`Authorization`, cookies,
 * `X-Api-Key`) and `Idempotency-Key`, which seals the stored answer of an embed URL's creation.
 */
export const redactedHeaderNames: ReadonlyArray<string> = ["authorization", "cookie", "set-cookie", "x-api-key", "idempotency-key"]

/** Runs `layer` (the HTTP server) with `redactedHeaderNames` redacted in its request spans. */
export const withRedactedHeaders = <A, E, R>(layer: Layer.Layer<A, E, R>) =>
  Layer.locally(layer, Headers.currentRedactedNames, redactedHeaderNames)

/** A one-time embed URL's token in a path: whoever reads it could load the survey as its respondent. */
const embedToken = /\/embed\/[^/?#\s]+/g

/** The text with every embed token replaced by `{token}`. */
const withoutSecrets = (text: string): string => text.replace(embedToken, "/embed/{token}")

/**
 * Rewrites the request span's attributes that carry a secret-bearing URL (`url.full`, `url.path`,
 * a `Referer` header), which the server's tracer records as the request came, so that an embed
 * token never reaches the collector. Other secrets travel in headers the tracer redacts
 * (`redactedHeaderNames`).
 */
export const redactSecretUrls = (span: Tracer.Span): void => {
  const rewritten: Array<readonly [string, string]> = []
  for (const [name, value] of span.attributes) {
    if (typeof value === "string" && value.includes("/embed/")) rewritten.push([name, withoutSecrets(value)])
  }
  for (const [name, value] of rewritten) span.attribute(name, value)
}
