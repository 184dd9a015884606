import type { SqlClient } from "@effect/sql"

/**
 * The two databases the service runs on. Statements are written once with `?` placeholders
 * where the text is built by hand (hot read paths, `sql.unsafe`); PostgreSQL numbers its
 * placeholders (`$1`, `$2`, …), so such a text passes through `positional` before it runs.
 * Tagged-template statements (`sql\`…\``) need nothing: the client's compiler numbers them.
 */
export type Dialect = "sqlite" | "pg"

export const dialectOf = (sql: SqlClient.SqlClient): Dialect =>
  sql.onDialectOrElse({ pg: () => "pg" as const, orElse: () => "sqlite" as const })

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

/** `text` (with `?` placeholders) as the client's database expects it. */
export const positional = (sql: SqlClient.SqlClient, text: string): string =>
  dialectOf(sql) === "pg" ? toNumbered(text) : text
