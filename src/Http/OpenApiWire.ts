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
