import { Schema } from "effect"
import { SurveyId } from "./Ids.js"

export const SurveyStatus = Schema.Literal("draft", "published", "closed").annotations({
  identifier: "SurveyStatus",
  description: "Lifecycle status: draft (not accepting responses), published (accepting), closed."
})
export type SurveyStatus = typeof SurveyStatus.Type

export class Survey extends Schema.Class<Survey>("Survey")({
  id: SurveyId.annotations({ description: "Unique survey id." }),
  title: Schema.String.annotations({ description: "Title as shown to respondents." }),
  description: Schema.NullOr(Schema.String).annotations({ description: "Null when none is set." }),
  status: SurveyStatus,
  published: Schema.Boolean.annotations({ description: "Whether the survey currently accepts responses." }),
  questionCount: Schema.Int.annotations({ description: "Number of questions (sections excluded)." }),
  responseCount: Schema.Int.annotations({ description: "All responses, including incomplete ones." }),
  createdAt: Schema.String.annotations({ description: "Creation time, ISO 8601." }),
  updatedAt: Schema.String.annotations({ description: "Time of last change, ISO 8601." })
}) {}
