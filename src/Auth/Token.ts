import { createHash } from "node:crypto"
import { randomBase62 } from "../Domain/Ids.js"

/** Only this hash of a token is ever stored; lookups go by hash, so comparison leaks no timing. */
export const hashToken = (token: string): string => createHash("sha256").update(token).digest("hex")

/** A new API key token: `sk_live_` + 32 base62 characters, shown once. */
export const newApiToken = (): string => `sk_live_${randomBase62(32)}`
