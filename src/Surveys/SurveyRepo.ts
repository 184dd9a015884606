import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import type { Position } from "../Domain/Cursor.js"
import { Survey, SurveyStatus } from "../Domain/Survey.js"
import { nullableText, num, oneOf, text } from "../Sql/Rows.js"

export class SurveyRow extends Schema.Class<SurveyRow>("SurveyRow")({
  id: Schema.String,
  workspaceId: Schema.String,
  title: Schema.String,
  description: Schema.NullOr(Schema.String),
  status: SurveyStatus,
  trashed: Schema.Number,
  questionCount: Schema.Number,
  responseCount: Schema.Number,
  createdAt: Schema.String,
  updatedAt: Schema.String
}) {
  toApi(): Survey {
    return new Survey(this.toWire(), { disableValidation: true })
  }
  /** The wire form of `toApi()`, for answers that skip re-encoding (see Http/PreEncoded). */
  toWire(): typeof Survey.Encoded {
    return {
      id: this.id,
      title: this.title,
      description: this.description,
      status: this.status,
      published: this.status === "published",
      questionCount: this.questionCount,
      responseCount: this.responseCount,
      createdAt: this.createdAt,
      updatedAt: this.updatedAt
    }
  }
}

const columns = "id, workspace_id, title, description, status, trashed, question_count, response_count, created_at, updated_at"

const surveyRowOf = (row: ReadonlyArray<unknown>): SurveyRow =>
  new SurveyRow({
    id: text(row, 0, "id"),
    workspaceId: text(row, 1, "workspace_id"),
    title: text(row, 2, "title"),
    description: nullableText(row, 3, "description"),
    status: oneOf(row, 4, "status", SurveyStatus.literals),
    trashed: num(row, 5, "trashed"),
    questionCount: num(row, 6, "question_count"),
    responseCount: num(row, 7, "response_count"),
    createdAt: text(row, 8, "created_at"),
    updatedAt: text(row, 9, "updated_at")
  }, { disableValidation: true })

export interface ListSurveys {
  readonly workspaceId: string
  readonly surveyIds: ReadonlyArray<string> | null
  readonly after: Option.Option<Position>
  readonly limit: number
}

export class SurveyRepo extends Effect.Service<SurveyRepo>()("Surveys/SurveyRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    // On the path of every survey request: one value row read with typed column reads, which
    // costs a fraction of a Schema class decode (docs/performance.md).
    const findById = (id: string) =>
      Effect.map(
        sql`SELECT ${sql.literal(columns)} FROM surveys WHERE id = ${id}`.values,
        (rows) => Option.map(Option.fromNullable(rows[0]), surveyRowOf)
      )

    const listPage = (r: ListSurveys) =>
      Effect.map(
        sql`SELECT ${sql.literal(columns)} FROM surveys
            WHERE workspace_id = ${r.workspaceId} AND trashed = 0
            ${r.surveyIds === null ? sql`` : sql`AND id IN ${sql.in(r.surveyIds)}`}
            ${
          Option.match(r.after, {
            onNone: () => sql``,
            onSome: (p) => sql`AND (updated_at, id) < (${p.key}, ${p.id})`
          })
        }
            ORDER BY updated_at DESC, id DESC
            LIMIT ${r.limit}`.values,
        (rows) => rows.map(surveyRowOf)
      )

    return {
      findById: (id: string) => findById(id).pipe(Effect.orDie),
      /** One page in "newest activity first" order, plus one row to tell whether more follow. */
      list: (req: ListSurveys) => listPage(req).pipe(Effect.orDie)
    } as const
  })
}) {}
