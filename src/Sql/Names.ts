/**
 * A name transform remembered per name: the client renames every column of every row it reads,
 * and a service only ever uses a few hundred distinct names, so each is computed once.
 */
const memoized = (transform: (name: string) => string) => {
  const known = new Map<string, string>()
  return (name: string): string => {
    let found = known.get(name)
    if (found === undefined) {
      found = transform(name)
      if (known.size < 10_000) known.set(name, found)
    }
    return found
  }
}

/** A field name as its column is named (`createdAt` → `created_at`), for every client of the service. */
export const camelToSnake = memoized((name) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`))

/** A column name as its field is named (`created_at` → `createdAt`), for every client of the service. */
export const snakeToCamel = memoized((name) => name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase()))
