/**
 * Typed reads of rows fetched with `.values` (arrays in column order, no name transform), for
 * hot read paths where a Schema decode per row costs more than the query itself. Each read
 * checks the value's type; a mismatch means the table no longer has the shape the query
 * expects, a defect reported with the column's name.
 */
type Row = ReadonlyArray<unknown>

const shapeError = (column: string, expected: string, value: unknown) =>
  new TypeError(`Column ${column}: expected ${expected}, got ${value === null ? "null" : typeof value}`)

export const text = (row: Row, index: number, column: string): string => {
  const value = row[index]
  if (typeof value === "string") return value
  throw shapeError(column, "text", value)
}

export const num = (row: Row, index: number, column: string): number => {
  const value = row[index]
  if (typeof value === "number") return value
  throw shapeError(column, "a number", value)
}

export const nullableText = (row: Row, index: number, column: string): string | null => {
  const value = row[index]
  if (value === null || typeof value === "string") return value
  throw shapeError(column, "text or null", value)
}

/** A text column holding one of `literals`. */
export const oneOf = <const L extends ReadonlyArray<string>>(
  row: Row,
  index: number,
  column: string,
  literals: L
): L[number] => {
  const value = row[index]
  const found = literals.find((literal) => literal === value)
  if (found !== undefined) return found
  throw shapeError(column, literals.join(" | "), value)
}

export const nullableNum = (row: Row, index: number, column: string): number | null => {
  const value = row[index]
  if (value === null || typeof value === "number") return value
  throw shapeError(column, "a number or null", value)
}

/** A text column holding one of `literals`, or null. */
export const nullableOneOf = <const L extends ReadonlyArray<string>>(
  row: Row,
  index: number,
  column: string,
  literals: L
): L[number] | null => (row[index] === null ? null : oneOf(row, index, column, literals))
