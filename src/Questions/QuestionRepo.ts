/**
 * Measured shortcut: questions are read as typed value rows (`rowShape`) on the `Reader`, their
 * options checked by a guard (`parseStoredOptions`), and built straight into their wire form,
 * skipping a Schema decode per row and a row class per item. A cell of the wrong type stops the
 * read with its column's name, and the wire form equals the declared schema's encoding
 * (test/Reader.test.ts, test/WireEncoding.test.ts, test/Questions.test.ts). Measurement:
 * docs/performance.md#measured-shortcuts, "Row readers compiled once" and "Pre-encoded bodies".
 */
import { Data, Effect, Schema } from "effect"
import { parseStoredOptions, Question, QuestionOption, QuestionType, StoredQuestionType } from "../Domain/Question.js"
import { type SurveyId, surveyId } from "../Domain/Ids.js"
import { Reader } from "../Sql/Reader.js"
import { column, rowShape, type RowOf } from "../Sql/Rows.js"
import { questionWire } from "./QuestionWire.js"

const decodeSettings = Schema.decodeUnknownSync(Schema.parseJson(Schema.Record({ key: Schema.String, value: Schema.Unknown })))

/**
 * A question row (table alias `q`): the `SELECT` list and its typed reads, also for statements
 * that read a survey and its questions at once.
 */
export const QuestionColumns = rowShape({
  id: column.text("q.id"),
  surveyId: column.map(column.text("q.survey_id"), surveyId),
  type: column.oneOf("q.type", StoredQuestionType.literals),
  label: column.text("q.label"),
  required: column.flag("q.required"),
  allowMultiple: column.flag("q.allow_multiple"),
  position: column.num("q.position"),
  options: column.map(column.text("q.options"), parseStoredOptions),
  settings: column.map(column.text("q.settings"), decodeSettings),
  deleted: column.flag("q.deleted")
})

const question = QuestionColumns.fields

/** Only what the API shows of a question: the list endpoint skips the respondent page's settings. */
export const ApiQuestionColumns = rowShape({
  id: question.id,
  type: column.oneOf("q.type", QuestionType.literals),
  label: question.label,
  required: question.required,
  allowMultiple: question.allowMultiple,
  position: question.position,
  options: question.options
})
export type ApiQuestionRow = RowOf<typeof ApiQuestionColumns.fields>

export const apiQuestionRowOf = (row: ReadonlyArray<unknown>): ApiQuestionRow => ApiQuestionColumns.read(row)

const apiQuestionsOf = `SELECT ${ApiQuestionColumns.columns}
  FROM questions q WHERE q.survey_id = ? AND q.deleted = 0 AND q.type <> 'section'
  ORDER BY q.position, q.id`

const questionsOf = `SELECT ${QuestionColumns.columns}
  FROM questions q WHERE q.survey_id = ? AND q.deleted = 0
  ORDER BY q.position, q.id`

export class QuestionRow extends Data.Class<RowOf<typeof QuestionColumns.fields>> {
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

export const questionRowOf = (row: ReadonlyArray<unknown>): QuestionRow => new QuestionRow(QuestionColumns.read(row))

export class QuestionRepo extends Effect.Service<QuestionRepo>()("Questions/QuestionRepo", {
  effect: Effect.gen(function*() {
    const reader = yield* Reader
    return {
      /** Current questions of a survey in order, sections included (they are layout for the respondent page). */
      listForSurvey: (surveyId: SurveyId) =>
        reader.values(questionsOf, [surveyId]).pipe(
          Effect.map((rows) => rows.map(questionRowOf)),
          Effect.orDie
        ),
      /** The questions the API shows (no sections), in order and in wire form. */
      listWire: (surveyId: SurveyId) =>
        reader.values(apiQuestionsOf, [surveyId]).pipe(
          Effect.map((rows) => rows.map((row) => questionWire(apiQuestionRowOf(row)))),
          Effect.orDie
        )
    } as const
  })
}) {}
