import { Schema } from "effect"
import { PreviousSecrets } from "../Domain/Webhook.js"

/** A webhook's replaced secrets as stored: the JSON text of the array, newest first. */
export const decodePreviousSecrets = Schema.decodeUnknownSync(Schema.parseJson(PreviousSecrets))
