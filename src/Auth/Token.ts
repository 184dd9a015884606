import { createHash, randomBytes } from "node:crypto"
import { randomBase62 } from "../Domain/Ids.js"

/** Only this hash of a token is ever stored; lookups go by hash, so comparison leaks no timing. */
export const hashToken = (token: string): string => createHash("sha256").update(token).digest("hex")

/** 32 random bytes, base64url: embed tokens and the respondent token an embed load hands out (decisions §8); a survey page's respondent token is signed instead (src/Respondents/RespondentTokens.ts). */
export const newOpaqueToken = (): string => randomBytes(32).toString("base64url")

/** A new API key token: `sk_live_` + 32 base62 characters, shown once. */
export const newApiToken = (): string => `sk_live_${randomBase62(32)}`
