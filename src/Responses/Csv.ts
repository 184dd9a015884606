import { HttpServerResponse } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Chunk, Effect, Option, Stream } from "effect"
import type { ResponseStatusFilter } from "../Domain/Response.js"
import type { QuestionType } from "../Domain/Question.js"

/**
 * The CSV export of decisions §6: RFC 4180 (comma, CRLF, quotes doubled), UTF-8 without BOM,
 * fixed columns then one per current question, streamed page by page from a keyset walk so
 * memory stays flat whatever the survey's size.
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

/** Free text that a spreadsheet would run as a formula gets a leading apostrophe. */
export const guardFormula = (text: string): string => (formulaStart.test(text) ? `'${text}` : text)

const isFreeText = (type: QuestionType) => type === "textarea" || type === "email"

/** Column titles: the fixed ones, then question labels with ` (2)`, ` (3)`… on repeats. */
export const headerOf = (questions: ReadonlyArray<CsvQuestion>): ReadonlyArray<string> => {
  const fixed = ["responseId", "surveyId", "externalUserId", "completed", "createdAt", "completedAt"]
  const used = new Set(fixed)
  const labels = questions.map((q) => {
    let name = q.label
    for (let n = 2; used.has(name); n++) name = `${q.label} (${n})`
    used.add(name)
    return name
  })
  return [...fixed, ...labels]
}

export const csvLine = (fields: ReadonlyArray<string>): string => fields.map(csvField).join(",") + "\r\n"

const text = (value: unknown): string => (typeof value === "string" ? value : value === null ? "" : String(value))

/** One CSV line from a row: id, externalUserId, completed, completedAt, createdAt, then one value per question. */
const rowLine = (surveyId: string, freeText: ReadonlyArray<boolean>, row: ReadonlyArray<unknown>): string => {
  let line = `${csvField(text(row[0]))},${csvField(surveyId)},${csvField(text(row[1]))},${
    row[2] === 1 ? "true" : "false"
  },${csvField(text(row[4]))},${csvField(text(row[3]))}`
  for (let i = 0; i < freeText.length; i++) {
    const cell = text(row[5 + i])
    line += "," + csvField(freeText[i] === true ? guardFormula(cell) : cell)
  }
  return line + "\r\n"
}

export interface CsvExport {
  readonly surveyId: string
  readonly questions: ReadonlyArray<CsvQuestion>
  readonly status: ResponseStatusFilter
  readonly createdAfter: string | undefined
  /** Only responses changed at or after it; the export keeps its createdAt order. */
  readonly updatedAfter: string | undefined
}

const pageSize = 1000

interface Position {
  readonly createdAt: string
  readonly id: string
}

/** The export as a byte stream, one chunk per keyset page. */
export const csvStream = (sql: SqlClient.SqlClient, req: CsvExport): Stream.Stream<Uint8Array> => {
  const encoder = new TextEncoder()
  const freeText = req.questions.map((q) => isFreeText(q.type))
  // One correlated lookup per question keeps each row a single result row (answers are keyed by response).
  const cells = req.questions.map((_, i) =>
    `(SELECT value FROM answers a WHERE a.response_id = r.id AND a.question_id = ?) AS c${i}`
  )
  const select = `SELECT r.id, r.external_user_id, r.completed, r.completed_at, r.created_at` +
    (cells.length > 0 ? `, ${cells.join(", ")}` : "") + ` FROM responses r WHERE r.survey_id = ?` +
    (req.status === "all" ? "" : ` AND r.completed = ${req.status === "completed" ? 1 : 0}`) +
    (req.createdAfter === undefined ? "" : " AND r.created_at >= ?") +
    (req.updatedAfter === undefined ? "" : " AND r.updated_at >= ?")
  const baseParams = [
    ...req.questions.map((q) => q.id),
    req.surveyId,
    ...(req.createdAfter === undefined ? [] : [req.createdAfter]),
    ...(req.updatedAfter === undefined ? [] : [req.updatedAfter])
  ]
  const first = `${select} ORDER BY r.created_at, r.id LIMIT ${pageSize}`
  const next = `${select} AND (r.created_at, r.id) > (?, ?) ORDER BY r.created_at, r.id LIMIT ${pageSize}`

  const page = (after: Option.Option<Position>) =>
    Option.match(after, {
      onNone: () => sql.unsafe(first, baseParams).values,
      onSome: (p) => sql.unsafe(next, [...baseParams, p.createdAt, p.id]).values
    }).pipe(Effect.orDie)

  const pages = Stream.paginateChunkEffect(Option.none<Position>(), (after) =>
    Effect.map(page(after), (rows): readonly [Chunk.Chunk<Uint8Array>, Option.Option<Option.Option<Position>>] => {
      let out = ""
      for (const row of rows) out += rowLine(req.surveyId, freeText, row)
      const last = rows[rows.length - 1]
      const more = rows.length === pageSize && last !== undefined && typeof last[0] === "string" &&
          typeof last[4] === "string"
        ? Option.some(Option.some({ createdAt: last[4], id: last[0] }))
        : Option.none()
      return [rows.length === 0 ? Chunk.empty() : Chunk.of(encoder.encode(out)), more]
    }))

  return Stream.concat(Stream.succeed(encoder.encode(csvLine(headerOf(req.questions)))), pages)
}

/** The download: `text/csv` with an attachment name of `<surveyId>-responses.csv`. */
export const csvResponse = (sql: SqlClient.SqlClient, req: CsvExport) =>
  HttpServerResponse.stream(csvStream(sql, req), {
    contentType: "text/csv; charset=utf-8",
    headers: { "content-disposition": `attachment; filename="${req.surveyId}-responses.csv"` }
  })
