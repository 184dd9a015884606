import type { QuestionType } from "../Domain/Question.js"

/**
 * The text of the CSV export (decisions §6): fields, header and lines. Plain functions with no
 * runtime imports, shared by the export (src/Responses/CsvExportRepo.ts) and the raw exporter of the CSV
 * benchmark.
 */

export interface CsvQuestion {
  readonly id: string
  readonly type: QuestionType
  readonly label: string
}

const needsQuotes = /[",\r\n]/
const formulaStart = /^[=+\-@\t\r]/

/** One field, quoted when it holds a comma, quote, CR or LF. */
export const csvField = (text: string): string =>
  needsQuotes.test(text) ? `"${text.replaceAll("\"", "\"\"")}"` : text

/**
 * Text that a spreadsheet would run as a formula gets a leading apostrophe: every text cell
 * (answers, option values, the `externalUserId`, ids) and the question labels of the header row,
 * all of which editors, respondents or integrators' end users choose.
 */
export const guardFormula = (text: string): string => (formulaStart.test(text) ? `'${text}` : text)

/** Whether the question's cells are text, guarded against formulas: all but the numeric `number` and `scale`. */
export const isTextCell = (type: QuestionType) => type !== "number" && type !== "scale"

/**
 * Column titles: the fixed ones, then question labels with ` (2)`, ` (3)`… on repeats, each
 * guarded against formulas.
 */
export const headerOf = (questions: ReadonlyArray<CsvQuestion>): ReadonlyArray<string> => {
  const fixed = ["responseId", "surveyId", "externalUserId", "completed", "createdAt", "completedAt"]
  const used = new Set(fixed)
  const labels = questions.map((q) => {
    let name = q.label
    for (let n = 2; used.has(name); n++) name = `${q.label} (${n})`
    used.add(name)
    return name
  })
  return [...fixed, ...labels.map(guardFormula)]
}

export const csvLine = (fields: ReadonlyArray<string>): string => fields.map(csvField).join(",") + "\r\n"

/**
 * How the cells of an export row are read: the export reads each with a typed column read
 * (src/Responses/CsvExportRepo.ts), the raw exporter of the CSV benchmark as they come.
 */
export interface CsvRowReads<Row> {
  readonly id: (row: Row) => string
  readonly externalUserId: (row: Row) => string | null
  readonly completed: (row: Row) => boolean
  readonly createdAt: (row: Row) => string
  readonly completedAt: (row: Row) => string | null
  /** The stored value of the row's answer to the `index`th question, null when there is none. */
  readonly answer: (row: Row, index: number) => string | null
}

/**
 * One CSV line from a row: id, survey id, externalUserId, completed, createdAt, completedAt, then
 * one value per question; `textCell[i]` tells whether the `i`th question's cell is text (`isTextCell`).
 */
export const rowLine = <Row>(
  reads: CsvRowReads<Row>,
  surveyId: string,
  textCell: ReadonlyArray<boolean>,
  row: Row
): string => {
  let line = `${csvField(guardFormula(reads.id(row)))},${csvField(guardFormula(surveyId))},${
    csvField(guardFormula(reads.externalUserId(row) ?? ""))
  },${reads.completed(row) ? "true" : "false"},${csvField(reads.createdAt(row))},${csvField(reads.completedAt(row) ?? "")}`
  for (let i = 0; i < textCell.length; i++) {
    const cell = reads.answer(row, i) ?? ""
    line += "," + csvField(textCell[i] === true ? guardFormula(cell) : cell)
  }
  return line + "\r\n"
}

const tokenChars = /^[A-Za-z0-9!#$%&'*+\-.^_`|~]+$/

/**
 * `Content-Disposition` of a download named `filename` (RFC 6266): the name as a quoted string,
 * ASCII only (a quote or backslash escaped, anything else outside printable ASCII as `_`), and
 * beside it the exact name as `filename*=UTF-8''…` when it holds more than token characters.
 * An imported survey id may hold any character, `"` and `;` included.
 */
export const attachmentDisposition = (filename: string): string => {
  const plain = filename.replace(/[^\x20-\x7e]/g, "_").replace(/["\\]/g, "\\$&")
  const header = `attachment; filename="${plain}"`
  if (tokenChars.test(filename)) return header
  const exact = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
  return `${header}; filename*=UTF-8''${exact}`
}
