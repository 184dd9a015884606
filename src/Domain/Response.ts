import { Schema } from "effect"
import { ResponseId, SurveyId } from "./Ids.js"
import { QuestionType } from "./Question.js"

export class Answer extends Schema.Class<Answer>("Answer")({
  fieldId: Schema.NullOr(Schema.String).annotations({ description: "Question id; null if the question no longer exists." }),
  type: Schema.NullOr(QuestionType),
  value: Schema.String.annotations({
    description: "The answer as stored; a JSON array string for choice and ranking answers with more than one entry."
  }),
  values: Schema.Array(Schema.String)
}) {}

export class SurveyResponse extends Schema.Class<SurveyResponse>("Response")({
  id: ResponseId,
  surveyId: SurveyId,
  externalUserId: Schema.NullOr(Schema.String).annotations({
    description: "The identifier given when the embed session was created; null for a regular respondent link."
  }),
  completed: Schema.Boolean,
  completedAt: Schema.NullOr(Schema.String),
  createdAt: Schema.String,
  updatedAt: Schema.String.annotations({
    description: "The last time the response or any of its answers changed: its createdAt until the first change; " +
      "completing is a change. Within one survey it follows the order in which changes were stored."
  }),
  answers: Schema.Array(Answer)
}) {}

export const ResponseStatusFilter = Schema.Literal("all", "completed", "incomplete")
export type ResponseStatusFilter = typeof ResponseStatusFilter.Type
