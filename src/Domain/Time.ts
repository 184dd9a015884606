import { ParseResult, Schema } from "effect"
import { boundedString } from "./Bounds.js"

/** UTC ISO 8601 with milliseconds, the only form the API writes. */
export const toIso = (millis: number): string => new Date(millis).toISOString()

const isoWithOffset =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(?:Z|([+-])(\d{2}):?(\d{2}))$/i

const daysInMonth = (year: number, month: number): number =>
  month === 2
    ? (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28
    : [4, 6, 9, 11].includes(month)
    ? 30
    : 31

/**
 * The instant an ISO 8601 text with an offset names, or undefined. Every field is checked
 * against the calendar and the clock first: `Date.parse` rolls 2026-02-30 over into March
 * and reads 24:00 as the next midnight, where a caller most likely made a mistake.
 */
export const parseIsoInstant = (input: string): number | undefined => {
  const m = isoWithOffset.exec(input)
  if (m === null) return undefined
  const [, year, month, day, hour, minute, second = "00", , , offsetHour = "00", offsetMinute = "00"] = m
  const y = Number(year)
  const mo = Number(month)
  if (mo < 1 || mo > 12) return undefined
  const d = Number(day)
  if (d < 1 || d > daysInMonth(y, mo)) return undefined
  if (Number(hour) > 23 || Number(minute) > 59 || Number(second) > 59) return undefined
  if (Number(offsetHour) > 23 || Number(offsetMinute) > 59) return undefined
  const millis = Date.parse(input)
  return Number.isFinite(millis) ? millis : undefined
}

/**
 * An ISO 8601 instant that carries its offset, decoded to the canonical UTC form. A bare date
 * or a local time without offset is ambiguous and is refused, and so is a date or time of day
 * that does not exist. Every instant the API takes is read with this one schema.
 */
export const IsoInstant = Schema.transformOrFail(boundedString(64), Schema.String, {
  strict: true,
  decode: (input, _, ast) => {
    const millis = parseIsoInstant(input)
    return millis !== undefined
      ? ParseResult.succeed(toIso(millis))
      : ParseResult.fail(
        new ParseResult.Type(
          ast,
          input,
          "expected an existing ISO 8601 instant with an offset, like 2026-01-31T12:00:00Z"
        )
      )
  },
  encode: ParseResult.succeed
}).annotations({
  description: "ISO 8601 instant with an offset, for example 2026-01-31T12:00:00.000Z",
  examples: ["2026-01-31T12:00:00.000Z"]
})
