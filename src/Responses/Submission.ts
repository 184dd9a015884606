import { Schema } from "effect"
import { IdText } from "../Domain/Bounds.js"
import { MAX_TEXT_LENGTH, MAX_VALUES } from "../Domain/Response.js"

/** The most answers one submission may carry. */
export const MAX_SUBMITTED_ANSWERS = 500

const SubmittedAnswer = Schema.Struct({
  questionId: IdText.annotations({ description: "A question of the survey." }),
  values: Schema.Array(Schema.String.pipe(Schema.maxLength(MAX_TEXT_LENGTH))).pipe(Schema.maxItems(MAX_VALUES)).annotations({
    description: "The answer, as the question type takes it (decisions §4); `[]` removes the answer."
  })
}).annotations({ parseOptions: { onExcessProperty: "error", errors: "all" } })

export type SubmittedAnswer = typeof SubmittedAnswer.Type

/** What a respondent sends: some answers, and whether the response is finished. Unknown fields are refused. */
export const Submission = Schema.Struct({
  answers: Schema.optionalWith(Schema.Array(SubmittedAnswer).pipe(Schema.maxItems(MAX_SUBMITTED_ANSWERS)), { default: () => [] }),
  finished: Schema.optionalWith(Schema.Boolean, { default: () => false }).annotations({
    description: "True completes the response: required questions must then be answered."
  })
}).annotations({ identifier: "Submission", parseOptions: { onExcessProperty: "error", errors: "all" } })

export type Submission = typeof Submission.Type
