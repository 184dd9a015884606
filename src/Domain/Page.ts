import { Schema } from "effect"
import { boundedString, MAX_CURSOR_LENGTH } from "./Bounds.js"

/** The largest page size. */
export const MAX_PAGE_SIZE = 100

export const Page = <A, I, R>(item: Schema.Schema<A, I, R>, identifier: string) =>
  Schema.Struct({
    data: Schema.Array(item).pipe(Schema.maxItems(MAX_PAGE_SIZE)),
    nextCursor: Schema.NullOr(boundedString(MAX_CURSOR_LENGTH)).annotations({
      description: "Opaque; pass it as `cursor` for the next page. Null on the last page."
    })
  }).annotations({ identifier })

/** `cursor`: opaque, from a previous `nextCursor`. */
export const Cursor = boundedString(MAX_CURSOR_LENGTH).annotations({ description: "Opaque value from a previous nextCursor." })

/** `limit`: default 25, 1 to 100. */
export const Limit = Schema.NumberFromString.pipe(
  Schema.int(),
  Schema.between(1, MAX_PAGE_SIZE, { message: () => `limit must be a whole number from 1 to ${MAX_PAGE_SIZE}` })
).annotations({
  description: "Page size, 1 to 100 (default 25).",
  // A query parameter is text on the wire; the document says what that text must hold.
  jsonSchema: {
    type: "integer",
    format: "int32",
    minimum: 1,
    maximum: MAX_PAGE_SIZE,
    description: "Page size, 1 to 100 (default 25)."
  }
})
