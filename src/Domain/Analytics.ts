import { Schema } from "effect"
import { Count, IdText, MAX_OPTIONS } from "./Bounds.js"
import { LabelText, MAX_QUESTIONS } from "./Question.js"

export class OptionCount extends Schema.Class<OptionCount>("OptionCount")({
  value: LabelText.annotations({ description: "Option as it appears in an answer." }),
  label: LabelText.annotations({ description: "Option as shown." }),
  count: Count.annotations({ description: "Respondents who chose it (placed it, for a ranking)." })
}) {}

export class NumericSummary extends Schema.Class<NumericSummary>("NumericSummary")({
  count: Count.annotations({ description: "Answers in the summary." }),
  mean: Schema.Number.annotations({ description: "Arithmetic mean; 0 when count is 0." }),
  median: Schema.NullOr(Schema.Number).annotations({
    description: "Middle answer; the mean of the two middle answers for an even count; null without answers."
  }),
  min: Schema.NullOr(Schema.Number).annotations({ description: "Lowest answer." }),
  max: Schema.NullOr(Schema.Number).annotations({ description: "Highest answer." }),
  standardDeviation: Schema.NullOr(Schema.Number).annotations({
    description: "Sample standard deviation; null below two answers."
  })
}) {}

export class RankedOption extends Schema.Class<RankedOption>("RankedOption")({
  value: LabelText.annotations({ description: "Ranked option as in an answer." }),
  label: LabelText.annotations({ description: "Option as shown." }),
  count: Count.annotations({ description: "Respondents who placed it." }),
  averageRank: Schema.NullOr(Schema.Number).annotations({
    description: "Mean 1-based position among those who placed it; null when nobody ranked it."
  })
}) {}

export class QuestionAnalytics extends Schema.Class<QuestionAnalytics>("QuestionAnalytics")({
  id: IdText.annotations({ description: "The question id." }),
  respondentCount: Count.annotations({ description: "Responses with a non-empty answer." }),
  skippedCount: Count.annotations({
    description: "Responses that reached the question (completed, or answered a question at the same or a later " +
      "order) and left it blank."
  }),
  textAnswerCount: Count.annotations({ description: "Non-empty free-text answers (textarea, email)." }),
  options: Schema.Array(OptionCount).pipe(Schema.maxItems(MAX_OPTIONS)).annotations({
    description: "Per option, zero counts included, for checkbox, scale and sort; empty otherwise."
  }),
  numeric: Schema.NullOr(NumericSummary).annotations({ description: "For number and scale; null otherwise." }),
  ranking: Schema.NullOr(Schema.Array(RankedOption).pipe(Schema.maxItems(MAX_OPTIONS))).annotations({ description: "For sort; null otherwise." })
}) {}

export class Analytics extends Schema.Class<Analytics>("Analytics")({
  responseCount: Count.annotations({ description: "All responses, including incomplete." }),
  completedCount: Count,
  incompleteCount: Count,
  completionRate: Schema.NullOr(Schema.Number).annotations({
    description: "completed / all, between 0 and 1; null before the first response."
  }),
  questions: Schema.Array(QuestionAnalytics).pipe(Schema.maxItems(MAX_QUESTIONS)).annotations({ description: "One entry per question, in survey order." }),
  stale: Schema.Boolean.annotations({
    description: "True while the counters are being rebuilt after a change of the question list that changes what " +
      "is counted: the figures are those counted before that change (changes to responses since are not in " +
      "them yet). False when they include every response as of the question list shown (within the usual few " +
      "seconds of a write)."
  })
}) {}
