import { Schema } from "effect"

export const Page = <A, I, R>(item: Schema.Schema<A, I, R>, identifier: string) =>
  Schema.Struct({
    data: Schema.Array(item),
    nextCursor: Schema.NullOr(Schema.String).annotations({
      description: "Opaque; pass it as `cursor` for the next page. Null on the last page."
    })
  }).annotations({ identifier })

/** `limit`: default 25, 1 to 100. */
export const Limit = Schema.NumberFromString.pipe(
  Schema.int(),
  Schema.between(1, 100, { message: () => "limit must be a whole number from 1 to 100" })
).annotations({
  description: "Page size, 1 to 100 (default 25).",
  // A query parameter is text on the wire; the document says what that text must hold.
  jsonSchema: { type: "integer", minimum: 1, maximum: 100, description: "Page size, 1 to 100 (default 25)." }
})
