import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Authorization } from "../Auth/Authorization.js"
import { Forbidden, InvalidRequest, NotFound } from "../Domain/Errors.js"
import { QuestionList, SurveyDefinition } from "../Domain/Question.js"
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
  .add(
    HttpApiEndpoint.get("definition")`/surveys/${SurveyIdParam}/definition`
      .addSuccess(SurveyDefinition)
      .addError(InvalidRequest.Wire)
      .addError(Forbidden.Wire)
      .addError(NotFound.Wire)
      .annotate(OpenApi.Summary, "The survey as authoring writes it, sections and settings included")
      .annotate(
        OpenApi.Description,
        "Title, description and every question with its id, in order, sections and settings included, and no read-only " +
          "field. Its `questions` sent back verbatim to PUT /surveys/{id}/questions change nothing; edit them and send " +
          "them with the answer's ETag as If-Match to change the survey without losing what you did not touch."
      )
      .annotate(OpenApi.Transform, documentEtag(200))
  )
  .middleware(Authorization)
  .annotate(OpenApi.Title, "Questions")
  .annotate(OpenApi.Description, "The questions of a survey, in survey order.")
{}
