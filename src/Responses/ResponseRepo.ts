/**
 * Measured shortcut: a page of responses is one range read of the clustered table, each row's
 * stored rendering of its answers written out as JSON text, skipping the answer rows and a Schema
 * decode and encode per response. A rendering is used only while current for the survey's
 * questions (src/Responses/AnswerDocumentRepo.ts), the text equals the declared schema's encoding
 * (test/WireEncoding.test.ts), and test/QueryPlans.test.ts checks the range read. Measurement:
 * docs/performance.md#measured-shortcuts, "Stored renderings of answers" and "Pre-encoded bodies".
 */
import type { SqlError } from "@effect/sql"
import { Effect, Option } from "effect"
import type { Position } from "../Domain/Cursor.js"
import { type ResponseId, responseId, type SurveyId, surveyId } from "../Domain/Ids.js"
import { Answer, type ResponseStatusFilter, SurveyResponse } from "../Domain/Response.js"
import { Reader } from "../Sql/Reader.js"
import { column, type Row, rowShape, type RowOf } from "../Sql/Rows.js"
import { parseStoredValues } from "./AnswerDocumentRepo.js"
import { type AnswerRow, AnswerColumns } from "./AnswerSql.js"
import { answersByResponse, answersJson, liveType, responseJson } from "./AnswerWire.js"

/** The columns of a response row, in the order of its wire fields. */
const responseFields = {
  id: column.map(column.text("id"), responseId),
  surveyId: column.map(column.text("survey_id"), surveyId),
  externalUserId: column.nullableText("external_user_id"),
  completedAt: column.nullableText("completed_at"),
  createdAt: column.text("created_at"),
  updatedAt: column.text("updated_at")
}
export type ResponseRow = RowOf<typeof responseFields>

/**
 * A row of the responses list: the response and its stored rendering of `answers` (the JSON text
 * of the array, AnswerDocumentRepo) when that rendering is current, else null. Its `?` is the
 * survey id, the list statement's first parameter.
 */
export const ListedColumns = rowShape({
  ...responseFields,
  answersJson: column.nullableText(
    "CASE WHEN answers_layout = (SELECT answer_layout FROM surveys WHERE id = ?) THEN answers_json END AS answers_json"
  )
})
type ListedResponse = RowOf<typeof ListedColumns.fields>

/**
 * The two keyset orders of the responses list: by start (`createdAt`, the default, with
 * `createdAfter`) or by last change (`updatedAt`, with `updatedAfter`), each tie-broken by id.
 */
export type ListOrder = "createdAt" | "updatedAt"

const orderColumn: Record<ListOrder, string> = { createdAt: "created_at", updatedAt: "updated_at" }

export interface ListResponses {
  readonly surveyId: SurveyId
  readonly status: ResponseStatusFilter
  readonly order: ListOrder
  /** The inclusive lower bound on the order's instant (`createdAfter` or `updatedAfter`). */
  readonly from: string | undefined
  readonly after: Option.Option<Position>
  readonly limit: number
}

/** A page of the responses list: the JSON text of its items, where it ended, whether more follow. */
export interface ListedPage {
  readonly items: string
  readonly last: { readonly id: string; readonly createdAt: string; readonly updatedAt: string } | undefined
  readonly more: boolean
}

/** One response in wire form, its answers already in order; `valuesOf` reads an answer's values. */
const responseWire = (
  row: ResponseRow,
  answers: ReadonlyArray<AnswerRow>,
  valuesOf: (answer: AnswerRow) => ReadonlyArray<string>
): typeof SurveyResponse.Encoded => ({
  id: row.id,
  surveyId: row.surveyId,
  externalUserId: row.externalUserId,
  completed: row.completedAt !== null,
  completedAt: row.completedAt,
  createdAt: row.createdAt,
  updatedAt: row.updatedAt,
  answers: answers.map((a) => {
    const type = liveType(a.type)
    return { fieldId: type === null ? null : a.questionId, type, value: a.value, values: valuesOf(a) }
  })
})

/** An answer's stored values, read where it is written out. */
const storedValues = (a: AnswerRow) => parseStoredValues(`${a.responseId}/${a.questionId}`, a.values)

/** Assembles API responses from rows and their answers, answers in question order. */
export const assemble = (rows: ReadonlyArray<ResponseRow>, answers: ReadonlyArray<AnswerRow>) => {
  const byResponse = answersByResponse(answers)
  return rows.map((row) => {
    const wire = responseWire(row, byResponse.get(row.id) ?? [], storedValues)
    return new SurveyResponse({
      ...wire,
      id: row.id,
      surveyId: row.surveyId,
      answers: wire.answers.map((a) => new Answer(a, { disableValidation: true }))
    }, { disableValidation: true })
  })
}

/** A question as an answer row joins it: its id, stored type, position and whether it was deleted. */
export interface PlacedQuestion {
  readonly id: string
  readonly type: NonNullable<AnswerRow["type"]>
  readonly position: number
  readonly deleted: boolean
}

/**
 * A response started by this transaction, exactly as `findWithAnswers` would read it back there:
 * its row, not yet stamped (`createdAt` and `updatedAt` are `draftedAt`), and its answer rows
 * beside `questions`, the survey's questions as the transaction read them. `answers` are the stored
 * columns of the answers it inserted (`value` and the JSON text of `values`).
 */
export const startedResponse = (
  started: { readonly id: ResponseId; readonly surveyId: SurveyId; readonly externalUserId: string | null; readonly draftedAt: string },
  answers: ReadonlyArray<{ readonly questionId: string; readonly value: string; readonly values: string }>,
  questions: ReadonlyArray<PlacedQuestion>
): { readonly response: SurveyResponse; readonly answers: ReadonlyArray<AnswerRow> } => {
  const byId = new Map(questions.map((question) => [question.id, question]))
  const rows = answers.map((answer): AnswerRow => {
    const question = byId.get(answer.questionId)
    return {
      responseId: started.id,
      questionId: answer.questionId,
      value: answer.value,
      values: answer.values,
      type: question === undefined || question.deleted ? null : question.type,
      position: question === undefined ? null : question.position
    }
  })
  const row: ResponseRow = {
    id: started.id,
    surveyId: started.surveyId,
    externalUserId: started.externalUserId,
    completedAt: null,
    createdAt: started.draftedAt,
    updatedAt: started.draftedAt
  }
  const [response] = assemble([row], rows)
  if (response === undefined) throw new Error("startedResponse: no response assembled")
  return { response, answers: rows }
}

/**
 * The JSON text of each response, in the order of `rows`, assembled from answer rows: what the
 * schema's encoding of `assemble` writes, byte for byte (test/WireEncoding.test.ts). A stored
 * rendering is the same text (AnswerDocumentRepo).
 */
export const assembleJson = (rows: ReadonlyArray<ResponseRow>, answers: ReadonlyArray<AnswerRow>): Array<string> => {
  const byResponse = answersByResponse(answers)
  return rows.map((row) => listedJson(row, answersJson(byResponse.get(row.id) ?? [], storedValues)))
}

/** One listed response's JSON text around the JSON text of its answers. */
const listedJson = (row: ResponseRow, answers: string) =>
  responseJson(row.id, row.surveyId, row.externalUserId, row.completedAt, row.createdAt, row.updatedAt, answers)

/**
 * A page is one statement: the response rows in keyset order (the primary key's order, or the
 * status index's), each with its stored rendering of `answers` when that rendering is current
 * (tagged with the survey's answer_layout).
 * test/QueryPlans.test.ts checks its plan.
 */
export const pageStatement = (
  r: ListResponses
): { readonly text: string; readonly params: ReadonlyArray<unknown> } => {
  const params: Array<unknown> = [r.surveyId, r.surveyId]
  let text = `SELECT ${ListedColumns.columns} FROM responses WHERE survey_id = ?`
  if (r.status !== "all") {
    text += " AND completed = ?"
    params.push(r.status === "completed" ? 1 : 0)
  }
  // A cursor's position already lies at or after the lower bound (the cursor is bound to the
  // filter), and one range keeps the seek on the cursor: page N costs page 1.
  const key = orderColumn[r.order]
  if (Option.isSome(r.after)) {
    text += ` AND (${key}, id) > (?, ?)`
    params.push(r.after.value.key, r.after.value.id)
  } else if (r.from !== undefined) {
    text += ` AND ${key} >= ?`
    params.push(r.from)
  }
  params.push(r.limit)
  return { text: `${text} ORDER BY ${key}, id LIMIT ?`, params }
}

const at = ListedColumns.at

/**
 * The JSON text of the first `count` listed rows (value rows of `ListedColumns`), each written
 * around its stored rendering of `answers`, joined by commas; undefined as soon as one rendering
 * is not current. The hot path of the responses list: typed reads of the row's cells, no row
 * object.
 */
export const renderedItems = (rows: ReadonlyArray<Row>, count: number): string | undefined => {
  let items = ""
  for (let i = 0; i < count; i++) {
    const row = rows[i] ?? []
    const answers = at.answersJson(row)
    if (answers === null) return undefined
    if (i > 0) items += ","
    items += responseJson(
      at.id(row),
      at.surveyId(row),
      at.externalUserId(row),
      at.completedAt(row),
      at.createdAt(row),
      at.updatedAt(row),
      answers
    )
  }
  return items
}

/**
 * `listed` (a statement of `ListedColumns` rows, ordered by `order`) with the answer rows of each
 * listed response whose rendering is not current (`AnswerColumns` after the listed columns), or
 * of every listed response with `answers: "all"`: one statement, so that each response and its
 * answers come from one snapshot. A response without such answers is one row, its answer columns
 * null.
 */
export const withAnswers = (listed: string, order: string, answers: "stale" | "all"): string =>
  `SELECT p.*, ${AnswerColumns.columns}
   FROM (${listed}) p
   LEFT JOIN answers a ON a.response_id = p.id${answers === "stale" ? " AND p.answers_json IS NULL" : ""}
   LEFT JOIN questions q ON q.id = a.question_id AND q.survey_id = p.survey_id
   ORDER BY ${order}`

const listedWidth = Object.keys(ListedColumns.fields).length

/** The responses of `withAnswers` rows (each once, in order) and the answers beside them. */
const gathered = (rows: ReadonlyArray<Row>) => {
  const listed: Array<ListedResponse> = []
  const answers: Array<AnswerRow> = []
  for (const row of rows) {
    if (at.id(row) !== listed[listed.length - 1]?.id) listed.push(ListedColumns.read(row))
    if (row[listedWidth] !== null) answers.push(AnswerColumns.read(row.slice(listedWidth)))
  }
  return { listed, answers } as const
}

/** Each listed response's JSON text: its stored rendering, or assembled from `answers`. */
const listedTexts = (rows: ReadonlyArray<ListedResponse>, answers: ReadonlyArray<AnswerRow>): Array<string> => {
  const missing = rows.filter((r) => r.answersJson === null)
  const assembled = new Map<string, string>()
  const texts = assembleJson(missing, answers)
  missing.forEach((row, i) => assembled.set(row.id, texts[i] ?? ""))
  return rows.map((row) => row.answersJson === null ? assembled.get(row.id) ?? "" : listedJson(row, row.answersJson))
}

/**
 * One response by id with its answers (`withAnswers`); its parameters are the survey id twice,
 * then the id. test/QueryPlans.test.ts checks its plan.
 */
export const byIdStatement = (answers: "stale" | "all"): string =>
  withAnswers(`SELECT ${ListedColumns.columns} FROM responses WHERE survey_id = ? AND id = ?`, "p.id", answers)

export class ResponseRepo extends Effect.Service<ResponseRepo>()("Responses/ResponseRepo", {
  effect: Effect.gen(function*() {
    const reader = yield* Reader

    /** The response and its answers (all of them, or only while its rendering is stale), from one statement. */
    const findOne = (surveyId: SurveyId, id: ResponseId, answers: "stale" | "all") =>
      Effect.map(
        reader.values(byIdStatement(answers), [surveyId, surveyId, id]),
        (rows) => {
          const found = gathered(rows)
          return Option.map(Option.fromNullable(found.listed[0]), (row) => ({ row, answers: found.answers }))
        }
      )

    /**
     * One page of `pageSize` responses in the requested order, as the JSON text of the `data`
     * array's items: one statement, and when every rendering is current (the usual case) one pass
     * over its value rows that writes each response around its stored rendering. When a rendering
     * is stale, the page is read again in one statement with the answer rows of its stale
     * responses, so that each response is assembled from answers of the same version as its row.
     */
    const page = (r: ListResponses) => {
      const statement = pageStatement({ ...r, limit: r.limit + 1 })
      return Effect.flatMap(reader.values(statement.text, statement.params), (rows): Effect.Effect<ListedPage, SqlError.SqlError> => {
        const count = Math.min(r.limit, rows.length)
        const items = renderedItems(rows, count)
        if (items !== undefined) {
          const last = count > 0 ? ListedColumns.read(rows[count - 1] ?? []) : undefined
          return Effect.succeed({ items, last, more: rows.length > r.limit })
        }
        const key = orderColumn[r.order]
        return Effect.map(
          reader.values(withAnswers(statement.text, `p.${key}, p.id`, "stale"), statement.params),
          (joined) => {
            const { answers, listed } = gathered(joined)
            const shown = listed.slice(0, r.limit)
            return { items: listedTexts(shown, answers).join(","), last: shown[shown.length - 1], more: listed.length > r.limit }
          }
        )
      })
    }

    return {
      /** One page in the requested order (`limit` responses) in wire form, for a pre-encoded body. */
      page: (req: ListResponses) => page(req).pipe(Effect.orDie),
      /** One response in wire form, for a pre-encoded body: its stored rendering while current. */
      findJson: (surveyId: SurveyId, id: ResponseId) =>
        findOne(surveyId, id, "stale").pipe(
          Effect.map(Option.map(({ answers, row }) => listedTexts([row], answers).join(""))),
          Effect.orDie
        ),
      /** One response assembled from its answer rows, and those rows. */
      findWithAnswers: (surveyId: SurveyId, id: ResponseId) =>
        findOne(surveyId, id, "all").pipe(
          Effect.map(Option.flatMap(({ answers, row }) =>
            Option.map(Option.fromNullable(assemble([row], answers)[0]), (response) => ({ response, answers }))
          )),
          Effect.orDie
        )
    } as const
  })
}) {}
