import { toIso } from "../Domain/Time.js"
import { documentAnswerHeader } from "../Http/OpenApiWire.js"

/**
 * A survey's version as `ETag` and `If-Match` carry it (v1-extensions §X7): its `updatedAt`, which
 * every change to the survey or its questions moves forward (`nextUpdatedAt`). Read from the row
 * the request reads anyway, so the version costs no statement. Responses do not move it: a client
 * editing a live survey is not refused because someone answered.
 */
export const etagOf = (updatedAt: string): string => `"${Date.parse(updatedAt).toString(36)}"`

/** The `ETag` of an answer with `status` carrying a survey's version, in the OpenAPI description (an `OpenApi.Transform`). */
export const documentEtag = (status: number) =>
  documentAnswerHeader(status, "ETag", {
    description: "The survey's version: send it as If-Match to change the survey only if nobody changed it since.",
    schema: { type: "string", maxLength: 16 }
  })

/**
 * Whether an `If-Match` header admits the version `etag`: absent, `*`, or a list naming it
 * (strong comparison, so a weak `W/"…"` never matches).
 */
export const ifMatchAdmits = (header: string | undefined, etag: string): boolean =>
  header === undefined || header.split(",").some((tag) => {
    const trimmed = tag.trim()
    return trimmed === "*" || trimmed === etag
  })

/**
 * The `updatedAt` of a change at `now`: later than the one before, even when the clock has not
 * moved since (two changes in one millisecond, a stopped test clock), so that each change is a new
 * version.
 */
export const nextUpdatedAt = (now: number, previous: string): string => toIso(Math.max(now, Date.parse(previous) + 1))
