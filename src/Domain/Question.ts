import { Schema } from "effect"

export const QuestionType = Schema.Literal(
  "textarea",
  "email",
  "checkbox",
  "number",
  "calendar",
  "country",
  "heatmap",
  "scale",
  "sort"
).annotations({
  identifier: "QuestionType",
  description: "Decides how the answer value is encoded."
})
export type QuestionType = typeof QuestionType.Type

/** What storage holds: the API types plus `section`, which is layout only. */
export const StoredQuestionType = Schema.Literal(...QuestionType.literals, "section")
export type StoredQuestionType = typeof StoredQuestionType.Type

/** A question's options as stored: a JSON array of `{ value, label }`. */
export const StoredOptions = Schema.parseJson(Schema.Array(Schema.Struct({ value: Schema.String, label: Schema.String })))
export type StoredOptions = typeof StoredOptions.Type

const isOptionList = Schema.is(Schema.typeSchema(StoredOptions))

/**
 * Reads stored options JSON: `JSON.parse` and a `Schema.is` check of `StoredOptions`, which costs
 * less than a `parseJson` decode on the read paths. Throws when the stored text is not such a list.
 */
export const parseStoredOptions = (json: string): StoredOptions => {
  const parsed: unknown = JSON.parse(json)
  if (!isOptionList(parsed)) throw new Error("stored options: expected a list of { value, label }")
  return parsed
}

export class QuestionOption extends Schema.Class<QuestionOption>("QuestionOption")({
  value: Schema.String.annotations({ description: "What an answer contains when the option is chosen." }),
  label: Schema.String.annotations({ description: "Option as shown; identical to value for text options." })
}) {}

export class Question extends Schema.Class<Question>("Question")({
  id: Schema.String.annotations({ description: "Unique; the id that an answer refers to." }),
  type: QuestionType,
  label: Schema.String.annotations({ description: "Question text, plain text." }),
  required: Schema.Boolean,
  allowMultiple: Schema.Boolean,
  order: Schema.Int.annotations({ description: "Position in the survey, ascending." }),
  options: Schema.Array(QuestionOption)
}) {}

export class QuestionList extends Schema.Class<QuestionList>("QuestionList")({
  data: Schema.Array(Question)
}) {}
