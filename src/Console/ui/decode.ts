// Small decoders for the API's answers: the console trusts no shape it did not check. A failed
// check throws a DecodeError naming the path, shown to the user like any other error.

export type Decoder<T> = (input: unknown, path: string) => T

export class DecodeError extends Error {}

const fail = (path: string, expected: string): never => {
  throw new DecodeError(`The service answered something unexpected at ${path || "the top"}: expected ${expected}.`)
}

export const str: Decoder<string> = (u, p) => typeof u === "string" ? u : fail(p, "a string")
export const num: Decoder<number> = (u, p) => typeof u === "number" && Number.isFinite(u) ? u : fail(p, "a number")
export const bool: Decoder<boolean> = (u, p) => typeof u === "boolean" ? u : fail(p, "true or false")

export const nullable = <T>(d: Decoder<T>): Decoder<T | null> => (u, p) => u === null ? null : d(u, p)

/** A field that may be absent: undefined then. */
export const optional = <T>(d: Decoder<T>): Decoder<T | undefined> => (u, p) => u === undefined ? undefined : d(u, p)

export const array = <T>(d: Decoder<T>): Decoder<ReadonlyArray<T>> => (u, p) =>
  Array.isArray(u) ? u.map((item: unknown, i) => d(item, `${p}.${i}`)) : fail(p, "a list")

export const literal = <const L extends string>(...values: ReadonlyArray<L>): Decoder<L> => (u, p) => {
  const found = values.find((v) => v === u)
  return found !== undefined ? found : fail(p, values.join(" or "))
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

export const struct = <S extends Record<string, Decoder<unknown>>>(shape: S): Decoder<{ readonly [K in keyof S]: ReturnType<S[K]> }> =>
  (u, p) => {
    if (!isRecord(u)) return fail(p, "an object")
    const out: Record<string, unknown> = {}
    for (const [key, d] of Object.entries(shape)) out[key] = d(u[key], p === "" ? key : `${p}.${key}`)
    return out as { readonly [K in keyof S]: ReturnType<S[K]> }
  }
