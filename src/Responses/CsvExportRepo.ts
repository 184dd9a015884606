import { Effect, Option } from "effect"
import { AppConfig } from "../Config.js"
import type { ResponseStatusFilter } from "../Domain/Response.js"
import { exportConcurrency, ExportSql, ExportSqlLive } from "../Sql/ExportClient.js"
import { SqlDialect } from "../Sql/Dialect.js"
import { column, nullableText, type Row, rowShape } from "../Sql/Rows.js"
import type { DatabaseError } from "../Sql/Transactions.js"
import { type CsvQuestion, type CsvRowReads, isTextCell, rowLine } from "./CsvText.js"

/** What one export holds: the survey, its questions (the answer columns), and the filters. */
export interface CsvExport {
  readonly surveyId: string
  readonly questions: ReadonlyArray<CsvQuestion>
  readonly status: ResponseStatusFilter
  readonly createdAfter: string | undefined
  /** Only responses changed at or after it; the export keeps its createdAt order. */
  readonly updatedAfter: string | undefined
}

/** Where a keyset page of the export ends: the next page starts after it. */
export interface ExportPosition {
  readonly createdAt: string
  readonly id: string
}

/** One page of the export: its CSV lines, and where the next page starts (none after the last). */
export interface ExportPage {
  readonly lines: string
  readonly next: Option.Option<ExportPosition>
}

const pageSize = 1000

/** A response's own columns of an export row; one answer per question follows them. */
const ExportColumns = rowShape({
  id: column.text("r.id"),
  externalUserId: column.nullableText("r.external_user_id"),
  completed: column.flag("r.completed"),
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

/**
 * The export's reads, on a database client of its own (`ExportSql`): saves, the delivery worker
 * and the quota never wait behind an export's pages.
 */
export class CsvExportRepo extends Effect.Service<CsvExportRepo>()("Responses/CsvExportRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* ExportSql
    const dialect = yield* SqlDialect
    const config = yield* AppConfig

    /**
     * The pages of one export in `createdAt, id` order, `pageSize` rows each, as CSV lines.
     *
     * Measured shortcut: positional rows (`.values`, typed cell reads), skipping an object and a
     * Schema decode per row of a page. Each read names its column when a cell holds something
     * else (test/TypedReads.test.ts), and the lines are the export's format (test/Csv.test.ts).
     * Measurement: docs/performance.md#measured-shortcuts, "Row readers compiled once".
     */
    const pagesOf = (req: CsvExport) => {
      const textCell = req.questions.map((q) => isTextCell(q.type))
      const reads = exportReads(req.questions)
      // One correlated lookup per question keeps each row a single result row (answers are keyed by response).
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
      const first = dialect.positional(`${select} ORDER BY r.created_at, r.id LIMIT ${pageSize}`)
      const next = dialect.positional(
        `${select} AND (r.created_at, r.id) > (?, ?) ORDER BY r.created_at, r.id LIMIT ${pageSize}`
      )

      return (after: Option.Option<ExportPosition>): Effect.Effect<ExportPage, DatabaseError> =>
        Effect.map(
          Option.match(after, {
            onNone: () => sql.unsafe(first, baseParams).values,
            onSome: (p) => sql.unsafe(next, [...baseParams, p.createdAt, p.id]).values
          }),
          (rows) => {
            let lines = ""
            for (const row of rows) lines += rowLine(reads, req.surveyId, textCell, row)
            const last = rows[rows.length - 1]
            return {
              lines,
              next: rows.length === pageSize && last !== undefined
                ? Option.some({ createdAt: ExportColumns.at.createdAt(last), id: ExportColumns.at.id(last) })
                : Option.none()
            }
          }
        )
    }

    return {
      pagesOf,
      /** How many exports the process streams at once: also the size of PostgreSQL's export pool. */
      concurrency: exportConcurrency(config)
    } as const
  }),
  dependencies: [ExportSqlLive]
}) {}
