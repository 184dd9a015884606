import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import { Question, QuestionOption, type QuestionType, StoredQuestionType } from "../Domain/Question.js"

const OptionsJson = Schema.parseJson(Schema.Array(Schema.Struct({ value: Schema.String, label: Schema.String })))
const SettingsJson = Schema.parseJson(Schema.Record({ key: Schema.String, value: Schema.Unknown }))

export class QuestionRow extends Schema.Class<QuestionRow>("QuestionRow")({
  id: Schema.String,
  surveyId: Schema.String,
  type: StoredQuestionType,
  label: Schema.String,
  required: Schema.Number,
  allowMultiple: Schema.Number,
  position: Schema.Number,
  options: OptionsJson,
  settings: SettingsJson,
  deleted: Schema.Number
}) {
  get isSection(): boolean {
    return this.type === "section"
  }
  toApi(this: QuestionRow & { readonly type: QuestionType }): Question {
    const wire = this.toWire()
    return new Question({
      ...wire,
      options: wire.options.map((o) => new QuestionOption(o, { disableValidation: true }))
    }, { disableValidation: true })
  }
  /** The wire form of `toApi()`, for answers that skip re-encoding (see Http/PreEncoded). */
  toWire(this: QuestionRow & { readonly type: QuestionType }): typeof Question.Encoded {
    return {
      id: this.id,
      type: this.type,
      label: this.label,
      required: this.required !== 0,
      allowMultiple: this.allowMultiple !== 0,
      order: this.position,
      options: this.options.map((o) => ({ value: o.value, label: o.label }))
    }
  }
}

/** A question the API shows: not a section, not deleted. */
export const isApiQuestion = (row: QuestionRow): row is QuestionRow & { readonly type: QuestionType } =>
  row.type !== "section" && row.deleted === 0

export class QuestionRepo extends Effect.Service<QuestionRepo>()("Questions/QuestionRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const bySurvey = SqlSchema.findAll({
      Request: Schema.String,
      Result: QuestionRow,
      execute: (surveyId) =>
        sql`SELECT id, survey_id, type, label, required, allow_multiple, position, options, settings, deleted
            FROM questions WHERE survey_id = ${surveyId} AND deleted = 0
            ORDER BY position, id`
    })
    return {
      /** Current questions of a survey in order, sections included (they are layout for the respondent page). */
      listForSurvey: (surveyId: string) =>
        bySurvey(surveyId).pipe(Effect.orDie, Effect.withSpan("QuestionRepo.listForSurvey"))
    } as const
  })
}) {}
