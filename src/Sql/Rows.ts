/**
 * Reads of rows fetched with `.values` (arrays in column order, no name transform). A row shape
 * (`rowShape`) declares each field once with its column: the declaration gives the `SELECT`
 * list and the typed reads, so that the two cannot drift apart. Each read checks the value's
 * type; a mismatch means the table no longer has the shape the query expects, a defect reported
 * with the column's name.
 *
 * Measured shortcut: typed cell reads, each shape's whole-row reader compiled once, skipping a
 * Schema decode per row on read paths where it cost more than the query itself. A cell of the
 * wrong type stops the read with its column's name (test/TypedReads.test.ts). Measurement:
 * docs/performance.md#measured-shortcuts, "Row readers compiled once".
 */
export type Row = ReadonlyArray<unknown>

const shapeError = (column: string, expected: string, value: unknown) =>
  new TypeError(`Column ${column}: expected ${expected}, got ${value === null ? "null" : typeof value}`)

/** One field of a row shape: its `SELECT` expression and the reader of its cell at an index. */
export interface Column<A> {
  readonly select: string
  readonly reader: (index: number) => (row: Row) => A
}

/** The name a column is reported by: its alias, or the column without its table. */
const nameOf = (select: string) =>
  /\sAS\s+"?(\w+)"?$/i.exec(select)?.[1] ?? select.replace(/^.*\./, "").replaceAll("\"", "")

// Single cells, checked. Also read on their own by statements whose rows have no one shape (the
// analytics snapshot's union, whose first column tells each row's table).

export const text = (row: Row, index: number, name: string): string => {
  const value = row[index]
  if (typeof value === "string") return value
  throw shapeError(name, "text", value)
}
export const num = (row: Row, index: number, name: string): number => {
  const value = row[index]
  if (typeof value === "number") return value
  throw shapeError(name, "a number", value)
}
export const nullableText = (row: Row, index: number, name: string): string | null => {
  const value = row[index]
  if (value === null || typeof value === "string") return value
  throw shapeError(name, "text or null", value)
}
export const nullableNum = (row: Row, index: number, name: string): number | null => {
  const value = row[index]
  if (value === null || typeof value === "number") return value
  throw shapeError(name, "a number or null", value)
}
/** A text cell holding one of `literals`. */
export const oneOf = <const L extends ReadonlyArray<string>>(
  row: Row,
  index: number,
  name: string,
  literals: L
): L[number] => {
  const value = row[index]
  const found = literals.find((literal) => literal === value)
  if (found !== undefined) return found
  throw shapeError(name, literals.join(" | "), value)
}

/**
 * The reader of the cell named `name` in a statement's column names (`null` for a column nobody
 * reads), for statements whose rows have no one shape: the index is found once, from the same
 * list the statement was built from. A name the list does not have is a defect at once.
 */
export const named = <A>(
  names: ReadonlyArray<string | null>,
  name: string,
  cell: (row: Row, index: number, name: string) => A
): (row: Row) => A => {
  const index = names.indexOf(name)
  if (index < 0) throw new Error(`No column ${name} among ${names.join(", ")}`)
  return (row) => cell(row, index, name)
}

/** A column read by `cell` at its index. */
const cellAt = <A>(cell: (row: Row, index: number, name: string) => A) => (index: number, name: string) => (row: Row) =>
  cell(row, index, name)

const of = <A>(at: (index: number, name: string) => (row: Row) => A) => (select: string): Column<A> => {
  const name = nameOf(select)
  return { select, reader: (index) => at(index, name) }
}

/** The columns a row shape is declared with, each from its `SELECT` expression. */
export const column = {
  text: of(cellAt(text)),
  num: of(cellAt(num)),
  nullableText: of(cellAt(nullableText)),
  nullableNum: of(cellAt(nullableNum)),
  /** A text column holding one of `literals`. */
  oneOf: <const L extends ReadonlyArray<string>>(select: string, literals: L) =>
    of((index, name) => (row: Row): L[number] => oneOf(row, index, name, literals))(select),
  /** A text column holding one of `literals`, or null. */
  nullableOneOf: <const L extends ReadonlyArray<string>>(select: string, literals: L) =>
    of((index, name) => (row: Row): L[number] | null => (row[index] === null ? null : oneOf(row, index, name, literals)))(
      select
    ),
  /** A flag stored as 0 or 1, read as a boolean; any other value is a defect named by its column. */
  flag: of((index, name) => (row: Row): boolean => {
    const value = num(row, index, name)
    if (value === 0 || value === 1) return value === 1
    throw shapeError(name, "0 or 1", value)
  }),
  /** A column read as another type (a stored JSON text parsed). */
  map: <A, B>(from: Column<A>, f: (a: A) => B): Column<B> => ({
    select: from.select,
    reader: (index) => {
      const inner = from.reader(index)
      return (row) => f(inner(row))
    }
  })
}

type Fields = { readonly [key: string]: Column<unknown> }
export type RowOf<F extends Fields> = { readonly [K in keyof F]: F[K] extends Column<infer A> ? A : never }

export interface RowShape<F extends Fields> {
  readonly fields: F
  /** The `SELECT` list, in declaration order. */
  readonly columns: string
  /** The whole row. */
  readonly read: (row: Row) => RowOf<F>
  /** One field of a row, for paths that read a few cells without building the row. */
  readonly at: { readonly [K in keyof F]: (row: Row) => RowOf<F>[K] }
}

/** Declares a row shape: its fields in `SELECT` order, each with its column. */
export const rowShape = <F extends Fields>(fields: F): RowShape<F> => {
  const keys = Object.keys(fields)
  const readers = keys.map((key, index) => {
    const c = fields[key]
    if (c === undefined) throw new Error(`row shape: no column for ${key}`)
    return c.reader(index)
  })
  // The row object is written as one literal of the declared keys (compiled once per shape): it
  // gets one hidden class, and each field's read is a call site of its own, as in a hand-written
  // read. Its type is the declaration's, which TypeScript cannot follow through the compilation.
  const read = new Function(
    "readers",
    `return (row) => ({ ${keys.map((key, i) => `${JSON.stringify(key)}: readers[${i}](row)`).join(", ")} })`
  )(readers) as RowShape<F>["read"]
  return {
    fields,
    columns: keys.map((key) => fields[key]?.select).join(", "),
    read,
    at: Object.fromEntries(keys.map((key, i) => [key, readers[i]])) as RowShape<F>["at"]
  }
}
