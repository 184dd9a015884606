import { Schema } from "effect"

export class OptionCount extends Schema.Class<OptionCount>("OptionCount")({
  value: Schema.String.annotations({ description: "Option as it appears in an answer." }),
  label: Schema.String.annotations({ description: "Option as shown." }),
  count: Schema.Int.annotations({ description: "Respondents who chose it (placed it, for a ranking)." })
}) {}

export class NumericSummary extends Schema.Class<NumericSummary>("NumericSummary")({
  count: Schema.Int.annotations({ description: "Answers in the summary." }),
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
  value: Schema.String.annotations({ description: "Ranked option as in an answer." }),
  label: Schema.String.annotations({ description: "Option as shown." }),
  count: Schema.Int.annotations({ description: "Respondents who placed it." }),
  averageRank: Schema.NullOr(Schema.Number).annotations({
    description: "Mean 1-based position among those who placed it; null when nobody ranked it."
  })
}) {}

export class QuestionAnalytics extends Schema.Class<QuestionAnalytics>("QuestionAnalytics")({
  id: Schema.String.annotations({ description: "The question id." }),
  respondentCount: Schema.Int.annotations({ description: "Responses with a non-empty answer." }),
  skippedCount: Schema.Int.annotations({
    description: "Responses that reached the question (completed, or answered a question at the same or a later " +
      "order) and left it blank."
  }),
  textAnswerCount: Schema.Int.annotations({ description: "Non-empty free-text answers (textarea, email)." }),
  options: Schema.Array(OptionCount).annotations({
    description: "Per option, zero counts included, for checkbox, scale and sort; empty otherwise."
  }),
  numeric: Schema.NullOr(NumericSummary).annotations({ description: "For number and scale; null otherwise." }),
  ranking: Schema.NullOr(Schema.Array(RankedOption)).annotations({ description: "For sort; null otherwise." })
}) {}

export class Analytics extends Schema.Class<Analytics>("Analytics")({
  responseCount: Schema.Int.annotations({ description: "All responses, including incomplete." }),
  completedCount: Schema.Int,
  incompleteCount: Schema.Int,
  completionRate: Schema.NullOr(Schema.Number).annotations({
    description: "completed / all, between 0 and 1; null before the first response."
  }),
  questions: Schema.Array(QuestionAnalytics).annotations({ description: "One entry per question, in survey order." }),
  stale: Schema.Boolean.annotations({
    description: "True while the counters are being rebuilt after a change of the question list that changes what " +
      "is counted: the figures are those counted before that change (changes to responses since are not in " +
      "them yet). False when they include every response as of the question list shown (within the usual few " +
      "seconds of a write)."
  })
}) {}
