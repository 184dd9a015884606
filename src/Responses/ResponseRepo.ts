import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import type { Position } from "../Domain/Cursor.js"
import { QuestionType, StoredQuestionType } from "../Domain/Question.js"
import { Answer, type ResponseStatusFilter, SurveyResponse } from "../Domain/Response.js"
import { placeholders, Reader } from "../Sql/Reader.js"
import { nullableNum, nullableOneOf, nullableText, text } from "../Sql/Rows.js"

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

type Ordered = Pick<AnswerRow, "questionId" | "type" | "position">

const answerOrder = (a: Ordered, b: Ordered) => {
  // Answers in question order; answers to deleted questions last.
  const pa = a.type === null || a.type === "section" ? Number.POSITIVE_INFINITY : a.position ?? 0
  const pb = b.type === null || b.type === "section" ? Number.POSITIVE_INFINITY : b.position ?? 0
  return pa === pb ? (a.questionId < b.questionId ? -1 : a.questionId > b.questionId ? 1 : 0) : pa - pb
}

/** A response's answers in question order, by response id. */
const answersByResponse = <A extends Ordered & { readonly responseId: string }>(answers: ReadonlyArray<A>) => {
  const byResponse = new Map<string, Array<A>>()
  for (const answer of answers) {
    const list = byResponse.get(answer.responseId)
    if (list === undefined) byResponse.set(answer.responseId, [answer])
    else list.push(answer)
  }
  for (const list of byResponse.values()) list.sort(answerOrder)
  return byResponse
}

const liveType = (type: AnswerRow["type"]): QuestionType | null => type === null || type === "section" ? null : type

/** One response in wire form, its answers already in order; `valuesOf` reads an answer's values. */
const responseWire = <A extends Ordered>(
  row: ResponseRow,
  answers: ReadonlyArray<A & { readonly value: string }>,
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
export const assemble = (rows: ReadonlyArray<ResponseRow>, answers: ReadonlyArray<AnswerRow>) => {
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

const isValues = Schema.is(Schema.Array(Schema.String))

const storedValues = (row: AnswerWireRow): ReadonlyArray<string> => {
  const parsed: unknown = JSON.parse(row.values)
  if (!isValues(parsed)) throw new Error(`answer ${row.responseId}/${row.questionId}: stored values are not a list`)
  return parsed
}

/** The wire form of `assemble`, for answers that skip re-encoding (see Http/PreEncoded). */
export const assembleWire = (
  rows: ReadonlyArray<ResponseRow>,
  answers: ReadonlyArray<AnswerWireRow>
): Array<typeof SurveyResponse.Encoded> => {
  const byResponse = answersByResponse(answers)
  return rows.map((row) => responseWire(row, byResponse.get(row.id) ?? [], storedValues))
}

const responseRowOf = (row: ReadonlyArray<unknown>): ResponseRow =>
  new ResponseRow({
    id: text(row, 0, "id"),
    surveyId: text(row, 1, "survey_id"),
    externalUserId: nullableText(row, 2, "external_user_id"),
    completedAt: nullableText(row, 3, "completed_at"),
    createdAt: text(row, 4, "created_at"),
    updatedAt: text(row, 5, "updated_at")
  }, { disableValidation: true })

const answerWireRowOf = (row: ReadonlyArray<unknown>): AnswerWireRow => ({
  responseId: text(row, 0, "response_id"),
  questionId: text(row, 1, "question_id"),
  value: text(row, 2, "value"),
  values: text(row, 3, "values"),
  type: nullableOneOf(row, 4, "type", StoredQuestionType.literals),
  position: nullableNum(row, 5, "position")
})

export class ResponseRepo extends Effect.Service<ResponseRepo>()("Responses/ResponseRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const reader = yield* Reader

    // The list's rows are value rows on the reader's connection, read with typed column reads: a
    // Schema decode of every response and answer row cost more than the queries (docs/performance.md).
    const page = (r: ListResponses) => {
      const params: Array<unknown> = [r.surveyId]
      let text = `SELECT ${columns} FROM responses WHERE survey_id = ?`
      if (r.status !== "all") {
        text += " AND completed = ?"
        params.push(r.status === "completed" ? 1 : 0)
      }
      // A cursor's position already lies at or after the lower bound (the cursor is bound to the
      // filter), and one range keeps the index seek on the cursor: page N costs page 1.
      const key = orderColumn[r.order]
      if (Option.isSome(r.after)) {
        text += ` AND (${key}, id) > (?, ?)`
        params.push(r.after.value.key, r.after.value.id)
      } else if (r.from !== undefined) {
        text += ` AND ${key} >= ?`
        params.push(r.from)
      }
      params.push(r.limit)
      return Effect.map(
        reader.values(`${text} ORDER BY ${key}, id LIMIT ?`, params),
        (rows) => rows.map(responseRowOf)
      )
    }

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

    const wireAnswersOf = (r: { readonly surveyId: string; readonly ids: ReadonlyArray<string> }) =>
      Effect.map(
        reader.values(
          `SELECT a.response_id, a.question_id, a.value, a."values",
                  CASE WHEN q.deleted = 0 THEN q.type END AS type, q.position
           FROM answers a
           LEFT JOIN questions q ON q.id = a.question_id AND q.survey_id = ?
           WHERE a.response_id IN ${placeholders(r.ids.length)}`,
          [r.surveyId, ...r.ids]
        ),
        (rows) => rows.map(answerWireRowOf)
      )

    return {
      /** One page in the requested order, with one extra row to tell whether more follow. */
      list: (req: ListResponses) => page(req).pipe(Effect.orDie),
      withAnswers: (surveyId: string, rows: ReadonlyArray<ResponseRow>) =>
        withAnswers(surveyId, rows).pipe(Effect.orDie),
      /** `withAnswers` in wire form, for answers that skip re-encoding. */
      withAnswersWire: (surveyId: string, rows: ReadonlyArray<ResponseRow>) =>
        (rows.length === 0
          ? Effect.succeed([])
          : Effect.map(wireAnswersOf({ surveyId, ids: rows.map((r) => r.id) }), (answers) => assembleWire(rows, answers)))
          .pipe(Effect.orDie),
      findById: (surveyId: string, id: string) =>
        findOne({ surveyId, id }).pipe(
          Effect.flatMap(Option.match({
            onNone: () => Effect.succeed(Option.none<SurveyResponse>()),
            onSome: (row) => Effect.map(withAnswers(surveyId, [row]), (all) => Option.fromNullable(all[0]))
          })),
          Effect.orDie
        )
    } as const
  }),
  dependencies: [Reader.Default]
}) {}
