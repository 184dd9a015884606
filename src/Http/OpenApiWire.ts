/**
 * The generated OpenAPI document, brought in line with what the service sends.
 *
 * `HttpApi` declares its own decode failure (`HttpApiDecodeError`, with `_tag` and array paths)
 * as a possible 400 of every operation. The service never sends it: `RequestErrors` turns every
 * decode failure into the documented `invalid_request` body. So that failure is taken out of
 * every answer it was added to (an answer left with nothing is dropped), each error answer is
 * described by the codes it carries, and schemas that nothing refers to any more go.
 *
 * The two answers Bun's HTTP parser gives on its own (413, 431, empty bodies) are told in the
 * document's description rather than declared per operation: an error without a body would
 * make a generated client's error type include `undefined`, so that `if (error)` no longer
 * narrows its answer to the success type.
 */

import { Schema } from "effect"
import { MAX_COUNT, MAX_ERROR_MESSAGE_LENGTH } from "../Domain/Bounds.js"

type Json = Record<string, unknown>

const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const objects = (value: unknown): Array<Json> => (isObject(value) ? Object.values(value).filter(isObject) : [])

const componentPrefix = "#/components/schemas/"
const frameworkDecodeError = `${componentPrefix}HttpApiDecodeError`

const refOf = (schema: unknown): string | undefined =>
  isObject(schema) && typeof schema.$ref === "string" ? schema.$ref : undefined

/** Every `$ref` reachable from `roots`, following component schemas, without recursion. */
const reachable = (roots: ReadonlyArray<unknown>, schemas: Json): Set<string> => {
  const seen = new Set<string>()
  const stack: Array<unknown> = [...roots]
  while (stack.length > 0) {
    const value = stack.pop()
    if (Array.isArray(value)) {
      stack.push(...value)
    } else if (isObject(value)) {
      const ref = refOf(value)
      if (ref !== undefined && ref.startsWith(componentPrefix) && !seen.has(ref)) {
        seen.add(ref)
        stack.push(schemas[ref.slice(componentPrefix.length)])
      }
      stack.push(...Object.values(value))
    }
  }
  return seen
}

/** "`forbidden`: The key is valid but…" for an error schema named `Error_<code>`. */
const describeError = (schemas: Json) => (member: unknown): string | undefined => {
  const ref = refOf(member)
  const name = ref?.slice(componentPrefix.length)
  if (name === undefined || !name.startsWith("Error_")) return undefined
  const described = schemas[name]
  const description = isObject(described) && typeof described.description === "string" ? described.description : ""
  return `\`${name.slice("Error_".length)}\`: ${description}`
}

export const describeWireErrors = (input: Json): Json => {
  const spec = structuredClone(input)
  const components = isObject(spec.components) ? spec.components : {}
  const schemas = isObject(components.schemas) ? components.schemas : {}
  for (const pathItem of objects(spec.paths)) {
    for (const operation of objects(pathItem)) {
      const responses = isObject(operation.responses) ? operation.responses : {}
      for (const [status, response] of Object.entries(responses)) {
        if (!isObject(response) || !isObject(response.content)) continue
        const media = response.content["application/json"]
        if (!isObject(media)) continue
        const members: ReadonlyArray<unknown> = isObject(media.schema) && Array.isArray(media.schema.anyOf)
          ? media.schema.anyOf
          : [media.schema]
        const kept = members.filter((member) => refOf(member) !== frameworkDecodeError)
        if (kept.length === 0) {
          delete responses[status]
          continue
        }
        media.schema = kept.length === 1 ? kept[0] : { anyOf: kept }
        const described = kept.map(describeError(schemas))
        if (Number(status) >= 400 && described.every((d) => d !== undefined)) {
          response.description = described.join(" ")
        }
      }
    }
  }
  const used = reachable([spec.paths], schemas)
  for (const name of Object.keys(schemas)) {
    if (!used.has(`${componentPrefix}${name}`)) delete schemas[name]
  }
  return spec
}

/** A header an answer carries, as an OpenAPI response header object. */
export interface AnswerHeader {
  readonly description: string
  readonly schema: Json
}

const records = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/**
 * An `OpenApi.Transform` adding `name` to the headers of the operation's `status` answer, which
 * HttpApi cannot declare itself.
 */
export const documentAnswerHeader = (status: number, name: string, header: AnswerHeader) =>
(operation: Record<string, unknown>): Record<string, unknown> => {
  const responses = Schema.decodeUnknownSync(records)(operation["responses"] ?? {})
  const answer = Schema.decodeUnknownSync(records)(responses[String(status)] ?? {})
  const headers = Schema.decodeUnknownSync(records)(answer["headers"] ?? {})
  return {
    ...operation,
    responses: { ...responses, [String(status)]: { ...answer, headers: { ...headers, [name]: header } } }
  }
}

/** An `OpenApi.Transform` of a whole document adding `name` to the headers of every answer of every operation. */
export const documentEveryAnswerHeader = (name: string, header: AnswerHeader) => (input: Json): Json => {
  const spec = structuredClone(input)
  for (const pathItem of objects(spec.paths)) {
    for (const operation of objects(pathItem)) {
      for (const answer of objects(operation.responses)) {
        answer.headers = { ...(isObject(answer.headers) ? answer.headers : {}), [name]: header }
      }
    }
  }
  return spec
}

/** The integration API's prefix: its answers report the request quota. */
const integrationPrefix = "/api/v1/"

const countSchema = { type: "integer", format: "int64", minimum: 0, maximum: MAX_COUNT }

const header = (description: string, required: boolean, schema: Json): Json => ({ description, required, schema })

/** decisions §2: the quota's headers, on every answer to a request that came with a valid key. */
const rateLimitHeaders = (required: boolean): Json => ({
  "RateLimit-Limit": header("Requests allowed by the quota limit with the least remaining (burst, day or month).", required, countSchema),
  "RateLimit-Remaining": header("Requests left under that limit, this one counted.", required, countSchema),
  "RateLimit-Reset": header("Seconds until that limit frees requests again.", required, countSchema)
})

const retryAfter = (required: boolean): Json => ({
  "Retry-After": header(
    "Whole seconds to wait before retrying.",
    required,
    { type: "integer", format: "int32", minimum: 1, maximum: 31 * 86_400 }
  )
})

/**
 * The headers an answer of `status` carries. Every answer to a request with a valid key reports
 * the quota; a 401 (no valid key) reports none, and a 403 or 503 only when the refusal came after
 * the quota counted the request (`forbidden`, an export's 503, not `plan_upgrade_required` nor a
 * quota store that could not count). The respondent API is limited per client address and survey
 * and reports no quota; its 429 says when to retry.
 */
const answerHeaders = (integration: boolean, status: string): Json => {
  const quota = !integration || status === "401" || status === "500"
    ? {}
    : rateLimitHeaders(status !== "403" && status !== "503")
  const wait = status === "429" ? retryAfter(true) : status === "503" ? retryAfter(false) : {}
  return { ...quota, ...wait }
}

const internalError = {
  type: "object",
  required: ["code", "message"],
  properties: {
    code: { type: "string", enum: ["internal_error"] },
    message: { type: "string", maxLength: MAX_ERROR_MESSAGE_LENGTH }
  },
  additionalProperties: false,
  description: "The service failed to answer; the failure is logged with the request id."
}

const internalErrorAnswer = {
  description: "`internal_error`: the service failed to answer; the failure is logged with the request id (`x-request-id`).",
  content: { "application/json": { schema: { $ref: `${componentPrefix}Error_internal_error` } } }
}

/** What the document says beside its operations: where it is served, its license, its tags. */
export interface ContractInfo {
  readonly servers: ReadonlyArray<Json>
  readonly license: Json
}

/**
 * Declares on every operation what the service sends beyond its schemas: the `RateLimit-*` and
 * `Retry-After` headers of each answer, and the 500 any request can meet; and the document's
 * servers and license.
 */
export const declareAnswers = (info: ContractInfo) => (input: Json): Json => {
  const spec = structuredClone(input)
  spec.servers = [...info.servers]
  spec.info = { ...(isObject(spec.info) ? spec.info : {}), license: info.license }
  const components = isObject(spec.components) ? spec.components : {}
  const schemas = isObject(components.schemas) ? components.schemas : {}
  schemas.Error_internal_error = internalError
  components.schemas = schemas
  spec.components = components
  for (const [path, pathItem] of Object.entries(isObject(spec.paths) ? spec.paths : {})) {
    if (!isObject(pathItem)) continue
    for (const operation of objects(pathItem)) {
      const responses = isObject(operation.responses) ? operation.responses : {}
      if (responses["500"] === undefined) responses["500"] = structuredClone(internalErrorAnswer)
      for (const [status, response] of Object.entries(responses)) {
        if (!isObject(response)) continue
        const added = answerHeaders(path.startsWith(integrationPrefix), status)
        if (Object.keys(added).length === 0) continue
        response.headers = { ...(isObject(response.headers) ? response.headers : {}), ...added }
      }
      operation.responses = responses
    }
  }
  return spec
}
