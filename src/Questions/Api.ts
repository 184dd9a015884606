import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Authorization } from "../Auth/Authorization.js"
import { Forbidden, InvalidRequest, NotFound } from "../Domain/Errors.js"
import { QuestionList } from "../Domain/Question.js"
import { SurveyIdParam } from "../Surveys/Api.js"
import { documentEtag } from "../Surveys/SurveyVersion.js"

export class QuestionsApi extends HttpApiGroup.make("questions")
  .add(
    HttpApiEndpoint.get("list")`/surveys/${SurveyIdParam}/questions`
      .addSuccess(QuestionList)
      .addError(InvalidRequest.Wire)
      .addError(Forbidden.Wire)
      .addError(NotFound.Wire)
      .annotate(OpenApi.Summary, "All questions of a survey, in survey order")
      .annotate(OpenApi.Transform, documentEtag(200))
  )
  .middleware(Authorization)
  .annotate(OpenApi.Title, "Questions")
  .annotate(OpenApi.Description, "The questions of a survey, in survey order.")
{}
