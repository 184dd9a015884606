import { Schema } from "effect"

/** The longest text a respondent may send as one value. */
export const MAX_TEXT_LENGTH = 10_000

const SubmittedAnswer = Schema.Struct({
  questionId: Schema.String.pipe(Schema.maxLength(200)).annotations({ description: "A question of the survey." }),
  values: Schema.Array(Schema.String.pipe(Schema.maxLength(MAX_TEXT_LENGTH))).pipe(Schema.maxItems(200)).annotations({
    description: "The answer, as the question type takes it (decisions §4); `[]` removes the answer."
  })
}).annotations({ parseOptions: { onExcessProperty: "error", errors: "all" } })

export type SubmittedAnswer = typeof SubmittedAnswer.Type

/** What a respondent sends: some answers, and whether the response is finished. Unknown fields are refused. */
export const Submission = Schema.Struct({
  answers: Schema.optionalWith(Schema.Array(SubmittedAnswer).pipe(Schema.maxItems(500)), { default: () => [] }),
  finished: Schema.optionalWith(Schema.Boolean, { default: () => false }).annotations({
    description: "True completes the response: required questions must then be answered."
  })
}).annotations({ identifier: "Submission", parseOptions: { onExcessProperty: "error", errors: "all" } })

export type Submission = typeof Submission.Type
