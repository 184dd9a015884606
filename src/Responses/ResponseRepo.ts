import { SqlClient, type SqlError, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import type { Position } from "../Domain/Cursor.js"
import { QuestionType, StoredQuestionType } from "../Domain/Question.js"
import { Answer, type ResponseStatusFilter, SurveyResponse } from "../Domain/Response.js"
import { placeholders, Reader } from "../Sql/Reader.js"
import { nullableNum, nullableOneOf, nullableText, text } from "../Sql/Rows.js"
import { parseStoredValues } from "./AnswerDocuments.js"
import { answersByResponse, answersJson, liveType, type PlacedAnswer, responseJson } from "./AnswerWire.js"

export class ResponseRow extends Schema.Class<ResponseRow>("ResponseRow")({
  id: Schema.String,
  surveyId: Schema.String,
  externalUserId: Schema.NullOr(Schema.String),
  completedAt: Schema.NullOr(Schema.String),
  createdAt: Schema.String,
  updatedAt: Schema.String
}) {}

const AnswerRow = Schema.Struct({
  responseId: Schema.String,
  questionId: Schema.String,
  value: Schema.String,
  values: Schema.parseJson(Schema.Array(Schema.String)),
  /** Null when the question is gone, deleted, or not a question of this survey. */
  type: Schema.NullOr(Schema.Union(QuestionType, Schema.Literal("section"))),
  position: Schema.NullOr(Schema.Number)
})
type AnswerRow = typeof AnswerRow.Type

const columns = "id, survey_id, external_user_id, completed_at, created_at, updated_at"

/**
 * The two keyset orders of the responses list: by start (`createdAt`, the default, with
 * `createdAfter`) or by last change (`updatedAt`, with `updatedAfter`), each tie-broken by id.
 */
export type ListOrder = "createdAt" | "updatedAt"

const orderColumn: Record<ListOrder, string> = { createdAt: "created_at", updatedAt: "updated_at" }

export interface ListResponses {
  readonly surveyId: string
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

/** A row of the responses list: the response and its stored rendering of `answers`, when current. */
export interface ListedResponse {
  readonly id: string
  readonly surveyId: string
  readonly externalUserId: string | null
  readonly completedAt: string | null
  readonly createdAt: string
  readonly updatedAt: string
  /** The JSON text of `answers` as stored (AnswerDocuments), or null when it must be assembled. */
  readonly answersJson: string | null
}

/** One response in wire form, its answers already in order; `valuesOf` reads an answer's values. */
const responseWire = <A extends PlacedAnswer & { readonly type: QuestionType | "section" | null }>(
  row: ResponseRow,
  answers: ReadonlyArray<A>,
  valuesOf: (answer: A) => ReadonlyArray<string>
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

/** Assembles API responses from rows and their answers, answers in question order. */
export const assemble = (rows: ReadonlyArray<Pick<ResponseRow, keyof ResponseRow>>, answers: ReadonlyArray<AnswerRow>) => {
  const byResponse = answersByResponse(answers)
  return rows.map((row) => {
    const wire = responseWire(row, byResponse.get(row.id) ?? [], (a) => a.values)
    return new SurveyResponse({
      ...wire,
      answers: wire.answers.map((a) => new Answer(a, { disableValidation: true }))
    }, { disableValidation: true })
  })
}

/**
 * An answer row for the list's wire path: `values` stays the stored JSON text until it is
 * written out, which spares a schema transformation per answer on the hottest read.
 */
const AnswerWireRow = Schema.Struct({ ...AnswerRow.fields, values: Schema.String })
type AnswerWireRow = typeof AnswerWireRow.Type

/**
 * The JSON text of each response, in the order of `rows`, assembled from answer rows: what the
 * schema's encoding of `assemble` writes, byte for byte (test/WireEncoding.test.ts). A stored
 * rendering is the same text (AnswerDocuments).
 */
export const assembleJson = (
  rows: ReadonlyArray<Omit<ListedResponse, "answersJson">>,
  answers: ReadonlyArray<AnswerWireRow>
): Array<string> => {
  const byResponse = answersByResponse(answers)
  return rows.map((row) =>
    listedJson(
      row,
      answersJson(byResponse.get(row.id) ?? [], (a) => parseStoredValues(`${a.responseId}/${a.questionId}`, a.values))
    )
  )
}

/** One listed response's JSON text around the JSON text of its answers. */
const listedJson = (row: Omit<ListedResponse, "answersJson">, answers: string) =>
  responseJson(row.id, row.surveyId, row.externalUserId, row.completedAt, row.createdAt, row.updatedAt, answers)

const listedOf = (row: ReadonlyArray<unknown>): ListedResponse => ({
  id: text(row, 0, "id"),
  surveyId: text(row, 1, "survey_id"),
  externalUserId: nullableText(row, 2, "external_user_id"),
  completedAt: nullableText(row, 3, "completed_at"),
  createdAt: text(row, 4, "created_at"),
  updatedAt: text(row, 5, "updated_at"),
  answersJson: nullableText(row, 6, "answers_json")
})

const answerWireRowOf = (row: ReadonlyArray<unknown>): AnswerWireRow => ({
  responseId: text(row, 0, "response_id"),
  questionId: text(row, 1, "question_id"),
  value: text(row, 2, "value"),
  values: text(row, 3, "values"),
  type: nullableOneOf(row, 4, "type", StoredQuestionType.literals),
  position: nullableNum(row, 5, "position")
})

/**
 * A page is one statement: the response rows in keyset order (the primary key's order, or the
 * status index's), each with its stored rendering of `answers` when that rendering is current
 * (tagged with the survey's answer_layout). test/QueryPlans.test.ts checks its plan.
 */
export const pageStatement = (r: ListResponses): { readonly text: string; readonly params: ReadonlyArray<unknown> } => {
  const params: Array<unknown> = [r.surveyId, r.surveyId]
  let text = `SELECT ${columns},
      CASE WHEN answers_layout = (SELECT answer_layout FROM surveys WHERE id = ?) THEN answers_json END
    FROM responses WHERE survey_id = ?`
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

export class ResponseRepo extends Effect.Service<ResponseRepo>()("Responses/ResponseRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const reader = yield* Reader

    const findOne = SqlSchema.findOne({
      Request: Schema.Struct({ surveyId: Schema.String, id: Schema.String }),
      Result: ResponseRow,
      execute: (r) => sql`SELECT ${sql.literal(columns)} FROM responses WHERE id = ${r.id} AND survey_id = ${r.surveyId}`
    })

    const answersOf = SqlSchema.findAll({
      Request: Schema.Struct({ surveyId: Schema.String, ids: Schema.Array(Schema.String) }),
      Result: AnswerRow,
      execute: (r) =>
        sql`SELECT a.response_id, a.question_id, a.value, a."values",
                   CASE WHEN q.deleted = 0 THEN q.type END AS type, q.position
            FROM answers a
            LEFT JOIN questions q ON q.id = a.question_id AND q.survey_id = ${r.surveyId}
            WHERE a.response_id IN ${sql.in(r.ids)}`
    })

    const withAnswers = (surveyId: string, rows: ReadonlyArray<ResponseRow>) =>
      rows.length === 0
        ? Effect.succeed([])
        : Effect.map(answersOf({ surveyId, ids: rows.map((r) => r.id) }), (answers) => assemble(rows, answers))

    const wireAnswersOf = (surveyId: string, ids: ReadonlyArray<string>) =>
      Effect.map(
        reader.values(
          `SELECT a.response_id, a.question_id, a.value, a."values",
                  CASE WHEN q.deleted = 0 THEN q.type END AS type, q.position
           FROM answers a
           LEFT JOIN questions q ON q.id = a.question_id AND q.survey_id = ?
           WHERE a.response_id IN ${placeholders(ids.length)}`,
          [surveyId, ...ids]
        ),
        (rows) => rows.map(answerWireRowOf)
      )

    /**
     * One page of `pageSize` responses in the requested order, as the JSON text of the `data`
     * array's items: one statement, and when every rendering is current (the usual case) one pass
     * over its value rows that writes each response around its stored rendering. Responses with
     * a stale rendering are assembled from their answer rows.
     */
    const page = (r: ListResponses) => {
      const statement = pageStatement({ ...r, limit: r.limit + 1 })
      return Effect.flatMap(reader.values(statement.text, statement.params), (rows): Effect.Effect<ListedPage, SqlError.SqlError> => {
        const count = Math.min(r.limit, rows.length)
        const lastRow = count > 0 ? listedOf(rows[count - 1] ?? []) : undefined
        const last = lastRow === undefined
          ? undefined
          : { id: lastRow.id, createdAt: lastRow.createdAt, updatedAt: lastRow.updatedAt }
        const more = rows.length > r.limit
        let items = ""
        for (let i = 0; i < count; i++) {
          const row = rows[i] ?? []
          const answers = nullableText(row, 6, "answers_json")
          if (answers === null) {
            return Effect.map(
              withStale(r.surveyId, rows.slice(0, count).map(listedOf)),
              (texts) => ({ items: texts.join(","), last, more })
            )
          }
          if (i > 0) items += ","
          items += responseJson(
            text(row, 0, "id"),
            text(row, 1, "survey_id"),
            nullableText(row, 2, "external_user_id"),
            nullableText(row, 3, "completed_at"),
            text(row, 4, "created_at"),
            text(row, 5, "updated_at"),
            answers
          )
        }
        return Effect.succeed({ items, last, more })
      })
    }

    /** Each listed response's JSON text: its stored rendering, or assembled from its answer rows. */
    const withStale = (surveyId: string, rows: ReadonlyArray<ListedResponse>) => {
      const missing = rows.filter((r) => r.answersJson === null)
      return Effect.map(wireAnswersOf(surveyId, missing.map((r) => r.id)), (answers) => {
        const assembled = new Map<string, string>()
        const texts = assembleJson(missing, answers)
        missing.forEach((row, i) => assembled.set(row.id, texts[i] ?? ""))
        return rows.map((row) =>
          row.answersJson === null ? assembled.get(row.id) ?? "" : listedJson(row, row.answersJson)
        )
      })
    }

    return {
      /** One page in the requested order (`limit` responses) in wire form, for a pre-encoded body. */
      page: (req: ListResponses) => page(req).pipe(Effect.orDie),
      findById: (surveyId: string, id: string) =>
        findOne({ surveyId, id }).pipe(
          Effect.flatMap(Option.match({
            onNone: () => Effect.succeed(Option.none<SurveyResponse>()),
            onSome: (row) => Effect.map(withAnswers(surveyId, [row]), (all) => Option.fromNullable(all[0]))
          })),
          Effect.orDie
        )
    } as const
  })
}) {}
