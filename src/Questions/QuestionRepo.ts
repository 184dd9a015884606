import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import {
  parseStoredOptions,
  Question,
  QuestionOption,
  QuestionType,
  StoredOptions,
  StoredQuestionType
} from "../Domain/Question.js"
import type { SurveyId } from "../Domain/Ids.js"
import { Reader } from "../Sql/Reader.js"
import { column, rowShape } from "../Sql/Rows.js"

const SettingsJson = Schema.parseJson(Schema.Record({ key: Schema.String, value: Schema.Unknown }))

/** Only what the API shows of a question: the list endpoint skips the respondent page's settings. */
const ApiQuestionRow = Schema.Struct({
  id: Schema.String,
  type: QuestionType,
  label: Schema.String,
  required: Schema.Number,
  allowMultiple: Schema.Number,
  position: Schema.Number,
  options: StoredOptions
})
type ApiQuestionRow = typeof ApiQuestionRow.Type


/** A question row as the API reads it: the `SELECT` list and its typed reads. */
export const ApiQuestionColumns = rowShape({
  id: column.text("id"),
  type: column.oneOf("type", QuestionType.literals),
  label: column.text("label"),
  required: column.num("required"),
  allowMultiple: column.num("allow_multiple"),
  position: column.num("position"),
  options: column.map(column.text("options"), parseStoredOptions)
})

export const apiQuestionRowOf = (row: ReadonlyArray<unknown>): ApiQuestionRow => ApiQuestionColumns.read(row)

const apiQuestionsOf = `SELECT ${ApiQuestionColumns.columns}
  FROM questions WHERE survey_id = ? AND deleted = 0 AND type <> 'section'
  ORDER BY position, id`

/**
 * The fields of a question as the API and the respondent page show them; for a question the API
 * shows (not a section), its wire form.
 */
export const questionWire = <T extends StoredQuestionType>(
  row: Pick<ApiQuestionRow, "id" | "label" | "required" | "allowMultiple" | "position" | "options"> & {
    readonly type: T
  }
) => ({
  id: row.id,
  type: row.type,
  label: row.label,
  required: row.required !== 0,
  allowMultiple: row.allowMultiple !== 0,
  order: row.position,
  options: row.options.map((o) => ({ value: o.value, label: o.label }))
})

export class QuestionRow extends Schema.Class<QuestionRow>("QuestionRow")({
  id: Schema.String,
  surveyId: Schema.String,
  type: StoredQuestionType,
  label: Schema.String,
  required: Schema.Number,
  allowMultiple: Schema.Number,
  position: Schema.Number,
  options: StoredOptions,
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
    return questionWire(this)
  }
}

/** A question the API shows: not a section, not deleted. */
export const isApiQuestion = (row: QuestionRow): row is QuestionRow & { readonly type: QuestionType } =>
  row.type !== "section" && row.deleted === 0

const decodeSettings = Schema.decodeUnknownSync(SettingsJson)

/**
 * A current question as the respondent page reads it beside its survey (table alias `q`): the
 * `SELECT` list and its typed reads, for statements that read a survey and its questions at once.
 */
export const PageQuestionColumns = rowShape({
  id: column.text("q.id"),
  surveyId: column.text("q.survey_id"),
  type: column.oneOf("q.type", StoredQuestionType.literals),
  label: column.text("q.label"),
  required: column.num("q.required"),
  allowMultiple: column.num("q.allow_multiple"),
  position: column.num("q.position"),
  options: column.map(column.text("q.options"), parseStoredOptions),
  settings: column.map(column.text("q.settings"), decodeSettings),
  deleted: column.num("q.deleted")
})

export const pageQuestionOf = (row: ReadonlyArray<unknown>): QuestionRow =>
  new QuestionRow(PageQuestionColumns.read(row), { disableValidation: true })

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
    const reader = yield* Reader
    // On the questions list's path: value rows on the reader's connection, typed column reads
    // (docs/performance.md).
    const apiBySurvey = (surveyId: SurveyId) =>
      Effect.map(reader.values(apiQuestionsOf, [surveyId]), (rows) => rows.map(apiQuestionRowOf))
    return {
      /** Current questions of a survey in order, sections included (they are layout for the respondent page). */
      listForSurvey: (surveyId: SurveyId) =>
        bySurvey(surveyId).pipe(Effect.orDie),
      /** The questions the API shows (no sections), in order and in wire form. */
      listWire: (surveyId: SurveyId) =>
        apiBySurvey(surveyId).pipe(
          Effect.map((rows) => rows.map(questionWire)),
          Effect.orDie
        )
    } as const
  })
}) {}
