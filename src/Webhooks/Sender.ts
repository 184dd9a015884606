import { Duration, Effect, Either } from "effect"
import { parseTarget, resolveTarget } from "./UrlPolicy.js"

/** What one HTTP attempt came to, as the delivery log records it (api-v1 §2.7). */
export interface AttemptOutcome {
  readonly ok: boolean
  /** Null when no HTTP exchange happened: blocked or unresolvable host, refused, timed out, redirected. */
  readonly responseStatus: number | null
  /** One line, at most 200 characters; null on success. */
  readonly error: string | null
  /** The `Retry-After` header of a 429 or 503 answer, as sent; null otherwise (v1-extensions §X1.5). */
  readonly retryAfter: string | null
}

export interface SendInput {
  readonly targetUrl: string
  readonly body: string
  readonly headers: Readonly<Record<string, string>>
  readonly allowPrivate: boolean
  readonly timeout: Duration.DurationInput
}

/** One line, at most 200 characters. */
export const oneLine = (text: string): string => {
  const line = text.replace(/\s+/g, " ").trim()
  return line.length > 200 ? `${line.slice(0, 199)}…` : line
}

const failed = (error: string, responseStatus: number | null = null, retryAfter: string | null = null): AttemptOutcome => ({
  ok: false,
  responseStatus,
  error: oneLine(error),
  retryAfter
})

const maxBodyBytes = 16 * 1024

/** Reads enough of the body to free the connection; a huge or endless body is cut off. */
const drain = async (response: Response): Promise<void> => {
  const reader = response.body?.getReader()
  if (reader === undefined) return
  let read = 0
  try {
    while (read < maxBodyBytes) {
      const chunk = await reader.read()
      if (chunk.done) return
      read += chunk.value.byteLength
    }
    await reader.cancel()
  } catch {
    // A reset while reading the body does not change the outcome: the status was received.
  }
}

const describe = (cause: unknown): string => {
  if (cause instanceof Error) {
    const code = "code" in cause && typeof cause.code === "string" ? `${cause.code}: ` : ""
    return `${code}${cause.message}`
  }
  return String(cause)
}

/**
 * One delivery attempt. The URL policy is applied again, the host resolved once, and the
 * connection made to the checked address itself, with the original Host header and TLS server
 * name, so that a second DNS answer can never be used. Redirects are never followed.
 */
export const send = (input: SendInput): Effect.Effect<AttemptOutcome> =>
  Effect.gen(function*() {
    const parsed = parseTarget(input.targetUrl, input.allowPrivate)
    if (Either.isLeft(parsed)) return failed(parsed.left)
    const target = parsed.right
    // One deadline for the whole attempt: a name that takes long to resolve counts against it too.
    const result = yield* Effect.gen(function*() {
      const address = yield* resolveTarget(target, input.allowPrivate)
      const pinned = new URL(target.url.href)
      pinned.hostname = address.family === 6 ? `[${address.address}]` : address.address
      return yield* Effect.tryPromise({
        // Aborting the signal (timeout, shutdown) stops both the exchange and the body read.
        try: async (signal) => {
          const response = await fetch(pinned.href, {
            method: "POST",
            body: input.body,
            headers: { ...input.headers, host: target.url.host },
            redirect: "manual",
            signal,
            ...(target.url.protocol === "https:" && target.literal === undefined
              ? { tls: { serverName: target.hostname } }
              : {})
          })
          await drain(response)
          return { status: response.status, retryAfter: response.headers.get("retry-after") }
        },
        catch: describe
      })
    }).pipe(
      Effect.timeoutFail({
        duration: input.timeout,
        onTimeout: () => `timed out after ${Duration.format(Duration.decode(input.timeout))}`
      }),
      Effect.either
    )
    if (Either.isLeft(result)) return failed(result.left)
    const { retryAfter, status } = result.right
    if (status >= 200 && status < 300) return { ok: true, responseStatus: status, error: null, retryAfter: null }
    if (status >= 300 && status < 400) return failed(`redirect (HTTP ${status}) not followed`)
    return failed(`HTTP ${status}`, status, status === 429 || status === 503 ? retryAfter : null)
  }).pipe(Effect.withSpan("Webhooks.send"))
