// Imports nothing: the read benchmark's PostgreSQL baseline (scripts/bench/pgBaseline.ts) uses the same two pieces.

/**
 * How PostgreSQL values arrive, by type oid (text format). Instants are stored as ISO text
 * (the same strings on both databases), so no date type is parsed; 64-bit integers (sequence
 * numbers, epoch milliseconds, counts and sums) and numerics become numbers, as SQLite gives
 * them; every other type stays the text PostgreSQL sent.
 */
export const pgParsers: Record<number, (value: string) => unknown> = {
  16: (value) => value === "t", // bool
  20: Number, // int8
  21: Number, // int2
  23: Number, // int4
  26: Number, // oid
  700: Number, // float4
  701: Number, // float8
  1700: Number // numeric
}

const numbered = new Map<string, string>()

/**
 * `text` with each `?` outside quotes replaced by `$1`, `$2`, … in order, and each numbered
 * `?N` by `$N`.
 * Statement texts are fixed strings, so each is converted once and remembered.
 */
export const toNumbered = (text: string): string => {
  const known = numbered.get(text)
  if (known !== undefined) return known
  let out = ""
  let n = 0
  let quote: string | null = null
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (quote !== null) {
      out += c
      if (c === quote) quote = null
    } else if (c === "'" || c === "\"") {
      quote = c
      out += c
    } else if (c === "?") {
      const digits = /^\d+/.exec(text.slice(i + 1))?.[0]
      if (digits !== undefined) {
        out += `$${digits}`
        i += digits.length
      } else {
        n += 1
        out += `$${n}`
      }
    } else {
      out += c
    }
  }
  if (numbered.size < 10_000) numbered.set(text, out)
  return out
}

