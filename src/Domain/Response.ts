import { Schema } from "effect"
import { boundedString, IdText, Timestamp } from "./Bounds.js"
import { ResponseId, SurveyId } from "./Ids.js"
import { QuestionType } from "./Question.js"

/** The longest text a respondent may send as one value. */
export const MAX_TEXT_LENGTH = 10_000

/** The most values one answer may hold. */
export const MAX_VALUES = 200

/** The longest `externalUserId`. */
export const MAX_EXTERNAL_USER_ID_LENGTH = 256

/**
 * The longest stored `value`: a JSON array of MAX_VALUES texts, each of MAX_TEXT_LENGTH characters
 * that JSON escapes as six (`\u0000`), with its quotes and commas.
 */
export const MAX_ANSWER_VALUE_LENGTH = 2 + MAX_VALUES * (6 * MAX_TEXT_LENGTH + 3)

/** An integrator's identifier of a person: 1 to 256 characters. */
export const ExternalUserId = Schema.String.pipe(
  Schema.minLength(1),
  Schema.maxLength(MAX_EXTERNAL_USER_ID_LENGTH, {
    message: () => `at most ${MAX_EXTERNAL_USER_ID_LENGTH} characters`,
    jsonSchema: { maxLength: MAX_EXTERNAL_USER_ID_LENGTH }
  })
)

export class Answer extends Schema.Class<Answer>("Answer")({
  fieldId: Schema.NullOr(IdText).annotations({ description: "Question id; null if the question no longer exists." }),
  type: Schema.NullOr(QuestionType),
  value: boundedString(MAX_ANSWER_VALUE_LENGTH).annotations({
    description: "The answer as stored; a JSON array string for choice and ranking answers with more than one entry."
  }),
  values: Schema.Array(boundedString(MAX_TEXT_LENGTH)).pipe(Schema.maxItems(MAX_VALUES))
}) {}

export class SurveyResponse extends Schema.Class<SurveyResponse>("Response")({
  id: ResponseId,
  surveyId: SurveyId,
  externalUserId: Schema.NullOr(boundedString(MAX_EXTERNAL_USER_ID_LENGTH)).annotations({
    description: "The identifier given when the embed session was created; null for a regular respondent link."
  }),
  completed: Schema.Boolean,
  completedAt: Schema.NullOr(Timestamp),
  createdAt: Timestamp,
  updatedAt: Timestamp.annotations({
    description: "The last time the response or any of its answers changed: its createdAt until the first change; " +
      "completing is a change. Within one survey it follows the order in which changes were stored."
  }),
  answers: Schema.Array(Answer).annotations({
    description: "One per question answered, in question order; answers to questions since deleted keep their place " +
      "with null fieldId."
  })
}) {}

export const ResponseStatusFilter = Schema.Literal("all", "completed", "incomplete")
export type ResponseStatusFilter = typeof ResponseStatusFilter.Type
