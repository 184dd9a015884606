import { ParseResult, Schema } from "effect"

/** UTC ISO 8601 with milliseconds, the only form the API writes. */
export const toIso = (millis: number): string => new Date(millis).toISOString()

const isoWithOffset = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/i

/**
 * An ISO 8601 instant that carries its offset, decoded to the canonical UTC form.
 * A bare date or a local time without offset is ambiguous and is refused.
 */
export const IsoInstant = Schema.transformOrFail(Schema.String, Schema.String, {
  strict: true,
  decode: (input, _, ast) => {
    const millis = isoWithOffset.test(input) ? Date.parse(input) : Number.NaN
    return Number.isFinite(millis)
      ? ParseResult.succeed(toIso(millis))
      : ParseResult.fail(
        new ParseResult.Type(
          ast,
          input,
          "expected an ISO 8601 timestamp with an offset, like 2026-01-31T12:00:00Z"
        )
      )
  },
  encode: ParseResult.succeed
}).annotations({
  description: "ISO 8601 instant with an offset, for example 2026-01-31T12:00:00.000Z",
  examples: ["2026-01-31T12:00:00.000Z"]
})
