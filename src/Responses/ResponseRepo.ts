import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import type { Position } from "../Domain/Cursor.js"
import { QuestionType } from "../Domain/Question.js"
import { Answer, type ResponseStatusFilter, SurveyResponse } from "../Domain/Response.js"

export class ResponseRow extends Schema.Class<ResponseRow>("ResponseRow")({
  id: Schema.String,
  surveyId: Schema.String,
  externalUserId: Schema.NullOr(Schema.String),
  completedAt: Schema.NullOr(Schema.String),
  createdAt: Schema.String
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

const columns = "id, survey_id, external_user_id, completed_at, created_at"

export interface ListResponses {
  readonly surveyId: string
  readonly status: ResponseStatusFilter
  readonly createdAfter: string | undefined
  readonly after: Option.Option<Position>
  readonly limit: number
}

const answerOrder = (a: AnswerRow, b: AnswerRow) => {
  // Answers in question order; answers to deleted questions last.
  const pa = a.type === null || a.type === "section" ? Number.POSITIVE_INFINITY : a.position ?? 0
  const pb = b.type === null || b.type === "section" ? Number.POSITIVE_INFINITY : b.position ?? 0
  return pa === pb ? (a.questionId < b.questionId ? -1 : a.questionId > b.questionId ? 1 : 0) : pa - pb
}

const toAnswer = (row: AnswerRow): Answer => {
  const live = row.type !== null && row.type !== "section"
  return new Answer({
    fieldId: live ? row.questionId : null,
    type: live ? row.type as QuestionType : null,
    value: row.value,
    values: row.values
  }, { disableValidation: true })
}

/** Assembles API responses from rows and their answers, answers in question order. */
export const assemble = (rows: ReadonlyArray<ResponseRow>, answers: ReadonlyArray<AnswerRow>) => {
  const byResponse = new Map<string, Array<AnswerRow>>()
  for (const answer of answers) {
    const list = byResponse.get(answer.responseId)
    if (list === undefined) byResponse.set(answer.responseId, [answer])
    else list.push(answer)
  }
  return rows.map((row) =>
    new SurveyResponse({
      id: row.id,
      surveyId: row.surveyId,
      externalUserId: row.externalUserId,
      completed: row.completedAt !== null,
      completedAt: row.completedAt,
      createdAt: row.createdAt,
      answers: (byResponse.get(row.id) ?? []).sort(answerOrder).map(toAnswer)
    }, { disableValidation: true })
  )
}

export class ResponseRepo extends Effect.Service<ResponseRepo>()("Responses/ResponseRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const page = SqlSchema.findAll({
      Request: Schema.Struct({
        surveyId: Schema.String,
        completed: Schema.NullOr(Schema.Number),
        createdAfter: Schema.NullOr(Schema.String),
        afterKey: Schema.NullOr(Schema.String),
        afterId: Schema.NullOr(Schema.String),
        limit: Schema.Number
      }),
      Result: ResponseRow,
      execute: (r) =>
        sql`SELECT ${sql.literal(columns)} FROM responses
            WHERE survey_id = ${r.surveyId}
            ${r.completed === null ? sql`` : sql`AND completed = ${r.completed}`}
            ${
          // A cursor's position already lies at or after createdAfter (the cursor is bound to the
          // filter), and one range keeps the index seek on the cursor: page N costs page 1.
          r.afterKey !== null && r.afterId !== null
            ? sql`AND (created_at, id) > (${r.afterKey}, ${r.afterId})`
            : r.createdAfter === null
            ? sql``
            : sql`AND created_at >= ${r.createdAfter}`
        }
            ORDER BY created_at, id
            LIMIT ${r.limit}`
    })

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

    return {
      /** One page in `createdAt, id` order, with one extra row to tell whether more follow. */
      list: (req: ListResponses) =>
        page({
          surveyId: req.surveyId,
          completed: req.status === "all" ? null : req.status === "completed" ? 1 : 0,
          createdAfter: req.createdAfter ?? null,
          afterKey: Option.match(req.after, { onNone: () => null, onSome: (p) => p.key }),
          afterId: Option.match(req.after, { onNone: () => null, onSome: (p) => p.id }),
          limit: req.limit
        }).pipe(Effect.orDie, Effect.withSpan("ResponseRepo.list")),
      withAnswers: (surveyId: string, rows: ReadonlyArray<ResponseRow>) =>
        withAnswers(surveyId, rows).pipe(Effect.orDie, Effect.withSpan("ResponseRepo.withAnswers")),
      findById: (surveyId: string, id: string) =>
        findOne({ surveyId, id }).pipe(
          Effect.flatMap(Option.match({
            onNone: () => Effect.succeed(Option.none<SurveyResponse>()),
            onSome: (row) => Effect.map(withAnswers(surveyId, [row]), (all) => Option.fromNullable(all[0]))
          })),
          Effect.orDie,
          Effect.withSpan("ResponseRepo.findById")
        )
    } as const
  })
}) {}
