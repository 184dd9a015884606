import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Authorization } from "../Auth/Authorization.js"
import { Forbidden, InvalidRequest, NotFound } from "../Domain/Errors.js"
import { Cursor, Limit, Page } from "../Domain/Page.js"
import { SurveyId } from "../Domain/Ids.js"
import { Survey } from "../Domain/Survey.js"
import { documentEtag } from "./SurveyVersion.js"

export const SurveyIdParam = HttpApiSchema.param("id", SurveyId.annotations({ description: "Survey id." }))

export const SurveyPage = Page(Survey, "SurveyPage")

export class SurveysApi extends HttpApiGroup.make("surveys")
  .add(
    HttpApiEndpoint.get("list", "/surveys")
      .setUrlParams(Schema.Struct({
        limit: Schema.optional(Limit),
        cursor: Schema.optional(Cursor)
      }))
      .addSuccess(SurveyPage)
      .addError(InvalidRequest.Wire)
      .annotate(OpenApi.Summary, "List surveys, newest activity first")
  )
  .add(
    HttpApiEndpoint.get("get")`/surveys/${SurveyIdParam}`
      .addSuccess(Survey)
      .addError(InvalidRequest.Wire)
      .addError(Forbidden.Wire)
      .addError(NotFound.Wire)
      .annotate(OpenApi.Summary, "Get one survey")
      .annotate(OpenApi.Transform, documentEtag(200))
  )
  .middleware(Authorization)
  .annotate(OpenApi.Title, "Surveys")
  .annotate(OpenApi.Description, "The workspace's surveys as the key sees them, newest activity first.")
{}
