import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import type { Position } from "../Domain/Cursor.js"
import { Survey, SurveyStatus } from "../Domain/Survey.js"

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

export interface ListSurveys {
  readonly workspaceId: string
  readonly surveyIds: ReadonlyArray<string> | null
  readonly after: Option.Option<Position>
  readonly limit: number
}

export class SurveyRepo extends Effect.Service<SurveyRepo>()("Surveys/SurveyRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const findById = SqlSchema.findOne({
      Request: Schema.String,
      Result: SurveyRow,
      execute: (id) => sql`SELECT ${sql.literal(columns)} FROM surveys WHERE id = ${id}`
    })

    const listPage = SqlSchema.findAll({
      Request: Schema.Struct({
        workspaceId: Schema.String,
        surveyIds: Schema.NullOr(Schema.Array(Schema.String)),
        afterKey: Schema.NullOr(Schema.String),
        afterId: Schema.NullOr(Schema.String),
        limit: Schema.Number
      }),
      Result: SurveyRow,
      execute: (r) =>
        sql`SELECT ${sql.literal(columns)} FROM surveys
            WHERE workspace_id = ${r.workspaceId} AND trashed = 0
            ${r.surveyIds === null ? sql`` : sql`AND id IN ${sql.in(r.surveyIds)}`}
            ${
          r.afterKey === null || r.afterId === null
            ? sql``
            : sql`AND (updated_at, id) < (${r.afterKey}, ${r.afterId})`
        }
            ORDER BY updated_at DESC, id DESC
            LIMIT ${r.limit}`
    })

    return {
      findById: (id: string) => findById(id).pipe(Effect.orDie),
      /** One page in "newest activity first" order, plus one row to tell whether more follow. */
      list: (req: ListSurveys) =>
        listPage({
          workspaceId: req.workspaceId,
          surveyIds: req.surveyIds,
          afterKey: Option.match(req.after, { onNone: () => null, onSome: (p) => p.key }),
          afterId: Option.match(req.after, { onNone: () => null, onSome: (p) => p.id }),
          limit: req.limit
        }).pipe(Effect.orDie)
    } as const
  })
}) {}
