/**
 * Measured shortcut: surveys are read as typed value rows (`rowShape`) on the `Reader` and built
 * straight into their wire form, skipping a Schema decode per row and a row class per item. A cell
 * of the wrong type stops the read with its column's name, and the wire form equals the declared
 * schema's encoding (test/Reader.test.ts, test/WireEncoding.test.ts, test/Surveys.test.ts).
 * Measurement: docs/performance.md#measured-shortcuts, "Row readers compiled once" and
 * "Pre-encoded bodies".
 */
import { SqlClient } from "@effect/sql"
import { Data, Effect, Option } from "effect"
import type { Position } from "../Domain/Cursor.js"
import { type SurveyId, surveyId, type WorkspaceId, workspaceId } from "../Domain/Ids.js"
import { Survey, SurveyStatus } from "../Domain/Survey.js"
import { QuestionColumns, type QuestionRow, questionRowOf } from "../Questions/QuestionRepo.js"
import { placeholders, Reader, type ValueRows } from "../Sql/Reader.js"
import { column, rowShape, type RowOf } from "../Sql/Rows.js"

/** A survey row as read: the `SELECT` list and its typed reads. */
export const SurveyColumns = rowShape({
  id: column.map(column.text("id"), surveyId),
  workspaceId: column.map(column.text("workspace_id"), workspaceId),
  title: column.text("title"),
  description: column.nullableText("description"),
  status: column.oneOf("status", SurveyStatus.literals),
  trashed: column.flag("trashed"),
  questionCount: column.num("question_count"),
  responseCount: column.num("response_count"),
  createdAt: column.text("created_at"),
  updatedAt: column.text("updated_at")
})
type SurveyFields = RowOf<typeof SurveyColumns.fields>

/** The wire form of a survey (see Http/PreEncoded). */
const surveyWire = (s: SurveyFields): typeof Survey.Encoded => ({
  id: s.id,
  title: s.title,
  description: s.description,
  status: s.status,
  published: s.status === "published",
  questionCount: s.questionCount,
  responseCount: s.responseCount,
  createdAt: s.createdAt,
  updatedAt: s.updatedAt
})

export class SurveyRow extends Data.Class<SurveyFields> {
  toApi(): Survey {
    return new Survey({ ...this.toWire(), id: this.id }, { disableValidation: true })
  }
  /** The wire form of `toApi()`, for answers that skip re-encoding (see Http/PreEncoded). */
  toWire(): typeof Survey.Encoded {
    return surveyWire(this)
  }
}

const byId = `SELECT ${SurveyColumns.columns} FROM surveys WHERE id = ?`

const surveyRowOf = (row: ReadonlyArray<unknown>): SurveyRow => new SurveyRow(SurveyColumns.read(row))

const surveyWidth = Object.keys(SurveyColumns.fields).length

/**
 * A survey and its current questions in order (sections included), in one statement: the survey's
 * `questionCount` and the questions shown beside it are of one moment, even while an import
 * replaces them. A survey without questions is one row, its question columns null.
 */
const withQuestionsFrom = `FROM (${byId}) s
  LEFT JOIN questions q ON q.survey_id = s.id AND q.deleted = 0
  ORDER BY q.position, q.id`
const withQuestions = `SELECT s.*, ${QuestionColumns.columns} ${withQuestionsFrom}`

/** A list row straight in wire form: a page of surveys skips the row class. */
export const surveyListWireOf = (row: ReadonlyArray<unknown>): typeof Survey.Encoded => surveyWire(SurveyColumns.read(row))

export interface ListSurveys {
  readonly workspaceId: WorkspaceId
  readonly surveyIds: ReadonlyArray<SurveyId> | null
  readonly after: Option.Option<Position>
  readonly limit: number
}

export class SurveyRepo extends Effect.Service<SurveyRepo>()("Surveys/SurveyRepo", {
  effect: Effect.gen(function*() {
    const reader = yield* Reader
    const sql = yield* SqlClient.SqlClient

    // On the path of every survey request: the reader's connection, typed column reads.
    const findById = (id: SurveyId) =>
      Effect.map(reader.values(byId, [id]), (rows) => Option.map(Option.fromNullable(rows[0]), surveyRowOf))

    const listPage = (r: ListSurveys) => {
      const params: Array<unknown> = [r.workspaceId]
      let text = `SELECT ${SurveyColumns.columns} FROM surveys WHERE workspace_id = ? AND trashed = 0`
      if (r.surveyIds !== null) {
        text += ` AND id IN ${placeholders(r.surveyIds.length)}`
        params.push(...r.surveyIds)
      }
      if (Option.isSome(r.after)) {
        text += " AND (updated_at, id) < (?, ?)"
        params.push(r.after.value.key, r.after.value.id)
      }
      params.push(r.limit)
      return Effect.map(
        reader.values(`${text} ORDER BY updated_at DESC, id DESC LIMIT ?`, params),
        (rows) => rows.map(surveyListWireOf)
      )
    }

    /** The survey and its questions from the rows of a read of both, whose columns start at `from`. */
    const surveyWithQuestions = (rows: ValueRows, from: number) =>
      Option.map(Option.fromNullable(rows[0]), (first) => ({
        survey: surveyRowOf(first.slice(from)),
        questions: rows.flatMap((row): Array<QuestionRow> =>
          row[from + surveyWidth] === null ? [] : [questionRowOf(row.slice(from + surveyWidth))]
        )
      }))

    const findWithQuestions = (id: SurveyId) => Effect.map(reader.values(withQuestions, [id]), (rows) => surveyWithQuestions(rows, 0))

    return {
      findById: (id: SurveyId) => findById(id).pipe(Effect.orDie),
      /** The survey with its current questions (sections included), read together: the respondent page. */
      findWithQuestions: (id: SurveyId) => findWithQuestions(id).pipe(Effect.orDie),
      /**
       * One page in "newest activity first" order, in wire form, plus one row to tell whether
       * more follow.
       */
      list: (req: ListSurveys) => listPage(req).pipe(Effect.orDie),
      /** Moves the survey to the trash. */
      trash: (id: SurveyId, now: string) =>
        sql`UPDATE surveys SET trashed = 1, updated_at = ${now} WHERE id = ${id}`.pipe(Effect.asVoid, Effect.orDie),
      /**
       * Sets the status of a survey not in the trash, only from `from`: false when it no longer has
       * that status (another move came first).
       */
      moveStatus: (id: SurveyId, from: SurveyStatus, to: SurveyStatus, now: string) =>
        sql`UPDATE surveys SET status = ${to}, updated_at = ${now}
          WHERE id = ${id} AND status = ${from} AND trashed = 0 RETURNING id`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        )
    } as const
  })
}) {}
