import { Either, Schema } from "effect"
import { InvalidRequest } from "./Errors.js"

const CursorJson = Schema.parseJson(
  Schema.Struct({
    /** The sort key of the last item of the page. */
    k: Schema.String,
    /** The id of the last item, the tie-breaker. */
    i: Schema.String,
    /** What the cursor was issued for: the list and its filters. */
    f: Schema.String
  })
)

export interface Position {
  readonly key: string
  readonly id: string
}

const decodeJson = Schema.decodeUnknownEither(CursorJson)
const cursorShape = /^[A-Za-z0-9_-]{1,2048}$/
const encodeJson = Schema.encodeSync(CursorJson)

/** An opaque keyset cursor: base64url of the position and the fingerprint of the query it belongs to. */
export const encodeCursor = (position: Position, fingerprint: string): string =>
  Buffer.from(encodeJson({ k: position.key, i: position.id, f: fingerprint })).toString("base64url")

export const decodeCursor = (
  cursor: string,
  fingerprint: string
): Either.Either<Position, InvalidRequest> => {
  // Made only when refused: an error captures a stack trace, which a valid cursor need not pay for.
  const invalid = () =>
    new InvalidRequest({
      message: "The cursor is not valid for this list; use a nextCursor from the same request.",
      issues: [{ path: "cursor", message: "not a cursor issued for this list and filter" }]
    })
  if (!cursorShape.test(cursor)) return Either.left(invalid())
  return decodeJson(Buffer.from(cursor, "base64url").toString("utf8")).pipe(
    Either.mapLeft(invalid),
    Either.flatMap((c) => c.f === fingerprint ? Either.right({ key: c.k, id: c.i }) : Either.left(invalid()))
  )
}
