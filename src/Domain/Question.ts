import { Schema } from "effect"
import { boundedInt, boundedString, IdText, MAX_OPTIONS, MAX_URL_LENGTH } from "./Bounds.js"
import { MAX_DESCRIPTION_LENGTH, MAX_TITLE_LENGTH } from "./Survey.js"

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

/** The most questions (sections included) a survey may have. */
export const MAX_QUESTIONS = 200

/** The longest question label, option value and option label. */
export const MAX_LABEL_LENGTH = 2_000

/** Text of a question or an option: at most MAX_LABEL_LENGTH characters. */
export const LabelText = boundedString(MAX_LABEL_LENGTH)

export class QuestionOption extends Schema.Class<QuestionOption>("QuestionOption")({
  value: LabelText.annotations({ description: "What an answer contains when the option is chosen." }),
  label: LabelText.annotations({ description: "Option as shown; identical to value for text options." })
}) {}

export class Question extends Schema.Class<Question>("Question")({
  id: IdText.annotations({ description: "Unique; the id that an answer refers to." }),
  type: QuestionType,
  label: LabelText.annotations({ description: "Question text, plain text." }),
  required: Schema.Boolean,
  allowMultiple: Schema.Boolean,
  order: boundedInt(-(2 ** 31), 2 ** 31 - 1).annotations({ description: "Position in the survey, ascending." }),
  options: Schema.Array(QuestionOption).pipe(Schema.maxItems(MAX_OPTIONS))
}) {}

export class QuestionList extends Schema.Class<QuestionList>("QuestionList")({
  data: Schema.Array(Question).pipe(Schema.maxItems(MAX_QUESTIONS))
}) {}

/** What authoring refuses that a schema does not: a field the body does not name. */
const strict = { parseOptions: { onExcessProperty: "error", errors: "all" } } as const

/** A path of the service's own pages (`/assets/demo-dashboard.svg`): one `/`, then no scheme, host, space or backslash. */
const ownPath = /^\/(?![/\\])[^\s\\]*$/

/**
 * Where a picture of the survey pages comes from: an https URL, or a path of the service's own
 * pages, as the demo's heatmap and imported surveys store it.
 */
const imageSource = boundedString(MAX_URL_LENGTH, "uri").pipe(
  Schema.filter((text) => ownPath.test(text) || (URL.canParse(text) && new URL(text).protocol === "https:"), {
    message: () => "must be an https URL or a path of this service starting with / (such as /assets/demo-dashboard.svg)"
  })
)

export const QuestionOptionInput = Schema.Struct({
  value: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(MAX_LABEL_LENGTH)).annotations({
    description: "What an answer contains when the option is chosen; an integer for `scale`. Distinct within the question."
  }),
  label: Schema.optionalWith(LabelText, { exact: true }).annotations({
    description: "Option as shown; the value when absent."
  })
}).annotations({ identifier: "QuestionOptionInput", ...strict })

export const QuestionSettingsInput = Schema.Struct({
  imageUrl: Schema.optionalWith(imageSource, { exact: true }).annotations({
    description: "`heatmap` only: the picture respondents click on, an https URL or a path of this service " +
      "(`/assets/demo-dashboard.svg`)."
  }),
  optionType: Schema.optionalWith(Schema.Literal("text", "image"), { exact: true }).annotations({
    description: "`checkbox` only: `image` shows each option's label as a picture (a data: or https URL)."
  })
}).annotations({ identifier: "QuestionSettingsInput", description: "How the survey pages present the question.", ...strict })

/** A question as authoring takes it (v1-extensions §X7); the list's order is the survey's order. */
export const QuestionInput = Schema.Struct({
  id: Schema.optionalWith(
    boundedString(64).pipe(Schema.pattern(/^[A-Za-z0-9_-]{1,64}$/, { message: () => "must be 1 to 64 of A-Z a-z 0-9 _ -" }))
  , { exact: true }).annotations({
    description: "1 to 64 of `A-Za-z0-9_-`, unique within the survey; `q_` and 20 random characters when absent. " +
      "An id the survey has keeps that question's answers."
  }),
  type: StoredQuestionType.annotations({
    description: "A question type, or `section`: a heading that groups the questions after it (layout only)."
  }),
  label: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(MAX_LABEL_LENGTH)).annotations({
    description: "Question text, plain text, 1 to 2,000 characters.",
    message: () => ({ message: "must be text of 1 to 2,000 characters", override: true })
  }),
  required: Schema.optionalWith(Schema.Boolean, { exact: true }).annotations({ description: "Default false." }),
  allowMultiple: Schema.optionalWith(Schema.Boolean, { exact: true }).annotations({ description: "Default false; true only for `checkbox`." }),
  options: Schema.optionalWith(
    Schema.Array(QuestionOptionInput).pipe(
      Schema.maxItems(MAX_OPTIONS, { message: () => `at most ${MAX_OPTIONS} options` })
    ),
    { exact: true }
  ).annotations({
    description: `A non-empty list of at most ${MAX_OPTIONS} distinct values for \`checkbox\`, \`scale\` (integers) ` +
      "and `sort`; absent or empty for every other type."
  }),
  settings: Schema.optionalWith(QuestionSettingsInput, { exact: true })
}).annotations({ identifier: "QuestionInput", ...strict })
export type QuestionInput = typeof QuestionInput.Type

export const QuestionInputList = Schema.Array(QuestionInput).pipe(
  Schema.maxItems(MAX_QUESTIONS, { message: () => `at most ${MAX_QUESTIONS} questions` })
)

/**
 * A question as `GET /surveys/{id}/definition` answers it (v1-extensions §X7): a `QuestionInput`
 * with every field present, sections and settings included, which `PUT …/questions` takes back
 * verbatim.
 */
export const QuestionDefinition = Schema.Struct({
  id: IdText.annotations({ description: "The question's id; send it back to keep its answers." }),
  type: StoredQuestionType,
  label: LabelText,
  required: Schema.Boolean,
  allowMultiple: Schema.Boolean,
  options: Schema.Array(Schema.Struct({ value: LabelText, label: LabelText })).pipe(Schema.maxItems(MAX_OPTIONS)).annotations({
    description: "Every option with its label; `[]` for the types without options."
  }),
  settings: QuestionSettingsInput
}).annotations({ identifier: "QuestionDefinition" })
export type QuestionDefinition = typeof QuestionDefinition.Type

/** A survey in its authoring form: what `PUT …/questions` and `PATCH` take, with nothing read-only. */
export const SurveyDefinition = Schema.Struct({
  title: boundedString(MAX_TITLE_LENGTH),
  description: Schema.NullOr(boundedString(MAX_DESCRIPTION_LENGTH)),
  questions: Schema.Array(QuestionDefinition).pipe(Schema.maxItems(MAX_QUESTIONS)).annotations({
    description: "Sections included, in the survey's order; send it back as the body of `PUT /surveys/{id}/questions`."
  })
}).annotations({ identifier: "SurveyDefinition" })
export type SurveyDefinition = typeof SurveyDefinition.Type

/** The definition form of a stored question: its fields as they are, its settings the presentation keys it has. */
export const questionDefinition = (row: {
  readonly id: string
  readonly type: StoredQuestionType
  readonly label: string
  readonly required: boolean
  readonly allowMultiple: boolean
  readonly options: ReadonlyArray<{ readonly value: string; readonly label: string }>
  readonly settings: Readonly<Record<string, unknown>>
}): QuestionDefinition => {
  const { imageUrl, optionType } = row.settings
  return {
    id: row.id,
    type: row.type,
    label: row.label,
    required: row.required,
    allowMultiple: row.allowMultiple,
    options: row.options.map((o) => ({ value: o.value, label: o.label })),
    settings: {
      ...(typeof imageUrl === "string" ? { imageUrl } : {}),
      ...(optionType === "text" || optionType === "image" ? { optionType } : {})
    }
  }
}
