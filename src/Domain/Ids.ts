import { Brand, Schema } from "effect"
import { IdText } from "./Bounds.js"

const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

/** `length` base62 characters from the system's secure random source, without modulo bias. */
export const randomBase62 = (length: number): string => {
  let out = ""
  while (out.length < length) {
    const bytes = crypto.getRandomValues(new Uint8Array(length * 2))
    for (const byte of bytes) {
      // 62 * 4 = 248: bytes at or above it would bias the first characters.
      if (byte < 248 && out.length < length) out += alphabet[byte % 62]
    }
  }
  return out
}

export type IdPrefix = "srv" | "q" | "rsp" | "evt" | "dlv" | "acc" | "ws" | "key" | "whk" | "emb"

/** A prefixed random id: `srv_` + 20 base62 characters (decisions §2). */
export const makeId = (prefix: IdPrefix): string => `${prefix}_${randomBase62(20)}`

// Branded ids of at most MAX_ID_LENGTH characters: the same strings on the wire (a brand adds
// nothing to the JSON Schema), but a webhook id passed where a survey id is expected no longer
// type-checks. Decoding a path parameter or a request body brands it; a row read from the database
// is branded by its nominal constructor (no check: the database holds what the service wrote).

export const SurveyId = IdText.pipe(Schema.brand("SurveyId"))
export const ResponseId = IdText.pipe(Schema.brand("ResponseId"))
export const WorkspaceId = IdText.pipe(Schema.brand("WorkspaceId"))
export const WebhookId = IdText.pipe(Schema.brand("WebhookId"))

export type SurveyId = typeof SurveyId.Type
export type ResponseId = typeof ResponseId.Type
export type WorkspaceId = typeof WorkspaceId.Type
export type WebhookId = typeof WebhookId.Type

export const surveyId = Brand.nominal<SurveyId>()
export const responseId = Brand.nominal<ResponseId>()
export const workspaceId = Brand.nominal<WorkspaceId>()
export const webhookId = Brand.nominal<WebhookId>()
