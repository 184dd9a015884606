import { Schema } from "effect"
import { boundedString, Count, Timestamp } from "./Bounds.js"
import { SurveyId } from "./Ids.js"

/** The longest survey title. */
export const MAX_TITLE_LENGTH = 500

/** The longest survey description. */
export const MAX_DESCRIPTION_LENGTH = 5_000

export const SurveyStatus = Schema.Literal("draft", "published", "closed").annotations({
  identifier: "SurveyStatus",
  description: "Lifecycle status: draft (not accepting responses), published (accepting), closed."
})
export type SurveyStatus = typeof SurveyStatus.Type

export class Survey extends Schema.Class<Survey>("Survey")({
  id: SurveyId.annotations({ description: "Unique survey id." }),
  title: boundedString(MAX_TITLE_LENGTH).annotations({ description: "Title as shown to respondents." }),
  description: Schema.NullOr(boundedString(MAX_DESCRIPTION_LENGTH)).annotations({ description: "Null when none is set." }),
  status: SurveyStatus,
  published: Schema.Boolean.annotations({ description: "Whether the survey currently accepts responses." }),
  questionCount: Count.annotations({ description: "Number of questions (sections excluded)." }),
  responseCount: Count.annotations({ description: "All responses, including incomplete ones." }),
  createdAt: Timestamp.annotations({ description: "Creation time, ISO 8601." }),
  updatedAt: Timestamp.annotations({ description: "Time of last change, ISO 8601." })
}) {}
