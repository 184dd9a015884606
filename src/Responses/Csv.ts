import { HttpServerResponse } from "@effect/platform"
import { edenGC } from "bun:jsc"
import { SqlClient } from "@effect/sql"
import { Chunk, Effect, Option, Stream } from "effect"
import type { ResponseStatusFilter } from "../Domain/Response.js"
import { attachmentDisposition, csvLine, type CsvQuestion, type CsvRowReads, headerOf, isFreeText, rowLine } from "./CsvText.js"
import { positional } from "../Sql/Dialect.js"
import { column, nullableText, type Row, rowShape } from "../Sql/Rows.js"

/**
 * The CSV export of decisions §6: RFC 4180 (comma, CRLF, quotes doubled), UTF-8 without BOM,
 * fixed columns then one per current question, streamed page by page from a keyset walk so
 * memory stays flat whatever the survey's size.
 */

export interface CsvExport {
  readonly surveyId: string
  readonly questions: ReadonlyArray<CsvQuestion>
  readonly status: ResponseStatusFilter
  readonly createdAfter: string | undefined
  /** Only responses changed at or after it; the export keeps its createdAt order. */
  readonly updatedAfter: string | undefined
}

const pageSize = 1000

/**
 * CSV text after which the export collects its garbage. Each page is garbage once it is written,
 * but JavaScriptCore sizes its heap to the machine's memory, so an export of 1,000,000 responses
 * grew the binary to ≈ 200 MB before the garbage went. A young-generation collection (`edenGC`)
 * after every MiB (about five pages) frees the pages just written, and every eighth collection is
 * a full one for what got older meanwhile: the peak stays near 125 MB for 1,000,000 responses,
 * and the export spends about a quarter less CPU than with a full collection after every MiB
 * (docs/performance.md). Each collection pauses the server for a few milliseconds.
 */
const collectAfterBytes = 1024 * 1024
const fullCollectionEvery = 8

/**
 * What a failed page ends the download with: the server then closes the connection before the
 * body's last chunk, so the client sees the download cut short. Bun prints the error that ends a
 * response's stream, stack included; this one has none, since the warning logged with it says why.
 */
const cutShort = () => {
  const error = new Error("CSV export cut short: a page failed")
  error.stack = error.message
  return error
}

interface Position {
  readonly createdAt: string
  readonly id: string
}

/** A response's own columns of an export row; one answer per question follows them. */
const ExportColumns = rowShape({
  id: column.text("r.id"),
  externalUserId: column.nullableText("r.external_user_id"),
  completed: column.map(column.num("r.completed"), (completed) => completed === 1),
  completedAt: column.nullableText("r.completed_at"),
  createdAt: column.text("r.created_at")
})
const answersFrom = Object.keys(ExportColumns.fields).length

/** The export's reads: typed, each naming its column when a cell holds something else. */
const exportReads = (questions: ReadonlyArray<CsvQuestion>): CsvRowReads<Row> => {
  const names = questions.map((q) => `answers.value (${q.id})`)
  return {
    ...ExportColumns.at,
    answer: (row, i) => nullableText(row, answersFrom + i, names[i] ?? "answers.value")
  }
}

/** The export as a byte stream, one chunk per keyset page. */
export const csvStream = (sql: SqlClient.SqlClient, req: CsvExport): Stream.Stream<Uint8Array> => {
  const encoder = new TextEncoder()
  const freeText = req.questions.map((q) => isFreeText(q.type))
  // One correlated lookup per question keeps each row a single result row (answers are keyed by response).
  const reads = exportReads(req.questions)
  const cells = req.questions.map((_, i) =>
    `(SELECT value FROM answers a WHERE a.response_id = r.id AND a.question_id = ?) AS c${i}`
  )
  const select = `SELECT ${ExportColumns.columns}` +
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
      onNone: () => sql.unsafe(positional(sql, first), baseParams).values,
      onSome: (p) => sql.unsafe(positional(sql, next), [...baseParams, p.createdAt, p.id]).values
    }).pipe(Effect.catchAll((error) =>
      Effect.zipRight(
        Effect.logWarning("CSV export cut short: a page failed", {
          surveyId: req.surveyId,
          reason: error.cause instanceof Error ? error.cause.message : error.message
        }),
        Effect.die(cutShort())
      )
    ))

  let sinceCollection = 0
  let collections = 0
  const pages = Stream.paginateChunkEffect(Option.none<Position>(), (after) =>
    Effect.map(page(after), (rows): readonly [Chunk.Chunk<Uint8Array>, Option.Option<Option.Option<Position>>] => {
      let out = ""
      for (const row of rows) out += rowLine(reads, req.surveyId, freeText, row)
      sinceCollection += out.length
      if (sinceCollection >= collectAfterBytes) {
        sinceCollection = 0
        collections++
        if (collections % fullCollectionEvery === 0) Bun.gc(true)
        else edenGC()
      }
      const last = rows[rows.length - 1]
      const more = rows.length === pageSize && last !== undefined
        ? Option.some(Option.some({ createdAt: ExportColumns.at.createdAt(last), id: ExportColumns.at.id(last) }))
        : Option.none()
      return [rows.length === 0 ? Chunk.empty() : Chunk.of(encoder.encode(out)), more]
    }))

  return Stream.concat(Stream.succeed(encoder.encode(csvLine(headerOf(req.questions)))), pages)
}

/** The download: `text/csv` with an attachment name of `<surveyId>-responses.csv`. */
export const csvResponse = (sql: SqlClient.SqlClient, req: CsvExport) =>
  HttpServerResponse.stream(csvStream(sql, req), {
    contentType: "text/csv; charset=utf-8",
    headers: { "content-disposition": attachmentDisposition(`${req.surveyId}-responses.csv`) }
  })
