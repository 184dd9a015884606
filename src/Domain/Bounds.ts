import { Schema } from "effect"

/**
 * The bounds of the contract (docs/api.md#bounds). Every field, parameter and answer declares its
 * bound in its schema, so that `/openapi.json` carries it and decoding enforces it (400
 * `invalid_request`); the limits of authoring bodies are these numbers too.
 */

/** The longest id of a survey, question, response, event or delivery (ids the service makes are shorter). */
export const MAX_ID_LENGTH = 128

/** The most options one question may have. */
export const MAX_OPTIONS = 200

/** The longest URL taken or answered (webhook targets, heatmap images, embed URLs). */
export const MAX_URL_LENGTH = 2048

/** The longest cursor (a `nextCursor` is far shorter). */
export const MAX_CURSOR_LENGTH = 2048

/** The longest `message` of an error answer; a longer one is cut. */
export const MAX_ERROR_MESSAGE_LENGTH = 1000

/** The longest instant the service writes (`2026-01-31T12:00:00.000Z`, or a six-digit year). */
const MAX_TIMESTAMP_LENGTH = 32

/** The largest count or limit answered: the largest integer a JSON number carries exactly. */
export const MAX_COUNT = Number.MAX_SAFE_INTEGER

/** Text of at most `max` characters, declared as `maxLength` (and `format` when given). */
export const boundedString = (max: number, format?: string) =>
  Schema.String.pipe(Schema.maxLength(max, {
    message: () => `at most ${max.toLocaleString("en-US")} characters`,
    jsonSchema: format === undefined ? { maxLength: max } : { maxLength: max, format }
  }))

/** A whole number from `min` to `max`, declared with its bounds and the format that holds it. */
export const boundedInt = (min: number, max: number) =>
  Schema.Number.pipe(
    Schema.int({
      jsonSchema: { type: "integer", format: min >= -(2 ** 31) && max < 2 ** 31 ? "int32" : "int64" }
    }),
    Schema.between(min, max)
  )

/** A count the service answers: 0 or more. */
export const Count = boundedInt(0, MAX_COUNT)

/** An instant the service answers: ISO 8601 in UTC with milliseconds. */
export const Timestamp = boundedString(MAX_TIMESTAMP_LENGTH, "date-time")

/** An id as the service answers it. */
export const IdText = boundedString(MAX_ID_LENGTH)

/** An absolute URL as the service answers it. */
export const UrlText = boundedString(MAX_URL_LENGTH, "uri")
