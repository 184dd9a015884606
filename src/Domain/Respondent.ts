import { Schema } from "effect"
import { Unauthorized } from "./Errors.js"
import { SurveyId } from "./Ids.js"

/** Who saves answers: the survey a respondent token is good for, and what it allows. */
export class RespondentContext extends Schema.Class<RespondentContext>("RespondentContext")({
  tokenHash: Schema.String,
  surveyId: SurveyId,
  /** The person an embed session was made for; null for a survey page's token. */
  externalUserId: Schema.NullOr(Schema.String),
  /** An embed session's token: it starts one response, no more. */
  singleResponse: Schema.Boolean
}) {}

/** The answer to a respondent token that is unknown, malformed, expired or gone (401). */
export const tokenRefused = () =>
  new Unauthorized({
    message: "Send the respondentToken of a survey page as `Authorization: Bearer <respondentToken>`; it may have expired."
  })
