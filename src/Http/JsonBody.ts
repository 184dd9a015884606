import { HttpApiMiddleware, HttpServerRequest } from "@effect/platform"
import { Effect, Layer } from "effect"
import { InvalidRequest } from "../Domain/Errors.js"

/**
 * Deepest nesting of arrays and objects a JSON body may have. The bodies the service takes
 * are two or three levels deep; a much deeper one is refused before it is parsed or decoded,
 * since formatting a decode error walks the value recursively.
 */
export const MAX_JSON_DEPTH = 64

/**
 * Annotations of an `/api/v1` request body: it is read leniently, a field the schema does not
 * name being ignored (a client may send fields a later version adds), and the OpenAPI document
 * says so (`additionalProperties: true`, where a struct would declare `false`). The respondent
 * API refuses unknown fields instead, and is declared strict.
 */
export const acceptsUnknownFields = { jsonSchema: { additionalProperties: true }, parseOptions: { errors: "all" } } as const

/**
 * Largest `/api/v1` request body. Every body the API takes (an embed session, webhook settings) is
 * a few hundred bytes; a larger declared one is refused before it is read, a larger streamed one
 * once read. The HTTP server refuses any body over 1 MiB before the service sees it.
 */
export const MAX_API_BODY_BYTES = 64 * 1024

/** Largest respondent API body (`/respond/v1`): a long survey's answers, free text included. */
export const MAX_RESPONDENT_BODY_BYTES = 256 * 1024

/**
 * Largest authoring body that carries a question list (`POST /surveys`, `PUT …/questions`): up to
 * 200 questions of up to 2,000 characters each, so the HTTP server's own limit.
 */
export const MAX_AUTHORING_BODY_BYTES = 1024 * 1024

const carriesQuestions = /^\/api\/v1\/surveys(\/[^/?]+\/questions)?(\?|$)/

/** The one body-size policy: 256 KiB on the respondent API, 1 MiB for a question list, 64 KiB elsewhere on `/api/v1`. */
export const bodyLimitOf = (url: string): number =>
  url.startsWith("/respond/v1/")
    ? MAX_RESPONDENT_BODY_BYTES
    : carriesQuestions.test(url)
    ? MAX_AUTHORING_BODY_BYTES
    : MAX_API_BODY_BYTES

/** Whether a JSON text nests arrays and objects deeper than `max`, in one pass without recursion. */
export const exceedsJsonDepth = (text: string, max: number = MAX_JSON_DEPTH): boolean => {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c) i++
      else if (c === 0x22) inString = false
    } else if (c === 0x22) {
      inString = true
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true
    } else if (c === 0x5d || c === 0x7d) {
      depth--
    }
  }
  return false
}

/**
 * Whether a Content-Type header names JSON, whatever its parameters (`charset=utf-8`). A request
 * without one is read as JSON, as the HTTP layer does.
 */
export const isJsonContentType = (header: string | undefined): boolean =>
  header === undefined || header.split(";")[0]?.trim().toLowerCase() === "application/json"

export const notJsonContentType = (header: string) =>
  new InvalidRequest({
    message: "The request body must be JSON, sent with `Content-Type: application/json`.",
    issues: [{ path: "", message: `expected content-type application/json, not ${JSON.stringify(header.slice(0, 100))}` }]
  })

export const tooDeep = () =>
  new InvalidRequest({
    message: `The request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels.`,
    issues: [{ path: "", message: `at most ${MAX_JSON_DEPTH} levels of nesting` }]
  })

export const tooLarge = (limit: number) =>
  new InvalidRequest({
    message: `The request body exceeds ${limit} bytes.`,
    issues: [{ path: "", message: `at most ${limit} bytes` }]
  })

const readsBody = (method: string) => method !== "GET" && method !== "HEAD" && method !== "OPTIONS"

/**
 * The body rules of the write endpoints, applied after authorization and before the body is
 * parsed: a Content-Type other than `application/json` is refused, and so is a body larger than
 * `bodyLimitOf` its path or JSON nested deeper than `MAX_JSON_DEPTH`. Other bodies (form fields,
 * multipart) would otherwise be read as if they were JSON, or fail inside the HTTP layer.
 */
export class JsonBody extends HttpApiMiddleware.Tag<JsonBody>()("Http/JsonBody", {
  failure: InvalidRequest.Wire
}) {}

export const JsonBodyLive = Layer.succeed(
  JsonBody,
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    if (!readsBody(request.method)) return
    const contentType = request.headers["content-type"]
    if (!isJsonContentType(contentType)) return yield* notJsonContentType(contentType ?? "")
    const declared = request.headers["content-length"]
    if (declared === undefined && request.headers["transfer-encoding"] === undefined) return
    const limit = bodyLimitOf(request.url)
    if (Number(declared) > limit) return yield* tooLarge(limit)
    // The text is kept by the request, so the parse that follows reads it from memory. A body
    // that cannot be read is answered by that parse.
    const text = yield* Effect.orElseSucceed(request.text, () => "")
    if (Buffer.byteLength(text) > limit) return yield* tooLarge(limit)
    if (exceedsJsonDepth(text)) return yield* tooDeep()
  })
)
