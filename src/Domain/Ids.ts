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
