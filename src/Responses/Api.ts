import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Authorization } from "../Auth/Authorization.js"
import { WriteAccess } from "../Auth/WriteAccess.js"
import { ForbiddenWire, InvalidRequestWire, NotFoundWire, ServiceUnavailableWire } from "../Domain/Errors.js"
import { Limit, Page } from "../Domain/Page.js"
import { ResponseStatusFilter, SurveyResponse } from "../Domain/Response.js"
import { IsoInstant } from "../Domain/Time.js"
import { SurveyId } from "../Surveys/Api.js"

export const ResponsePage = Page(SurveyResponse, "ResponsePage")

export const ResponseListParams = Schema.Struct({
  limit: Schema.optional(Limit),
  cursor: Schema.optional(Schema.String.annotations({ description: "Opaque value from a previous nextCursor." })),
  createdAfter: Schema.optional(IsoInstant.annotations({
    description: "Only responses created at or after this instant (inclusive); filters on createdAt."
  })),
  updatedAfter: Schema.optional(IsoInstant.annotations({
    description: "Only responses changed at or after this instant (inclusive), ordered by updatedAt then id, " +
      "oldest first. Poll with the largest updatedAt seen so far to never miss a change (one may be seen again). " +
      "Cannot be combined with createdAfter."
  })),
  status: Schema.optional(ResponseStatusFilter.annotations({
    description: "all (default), completed, or incomplete (abandoned)."
  })),
  format: Schema.optional(Schema.Literal("csv").annotations({
    description: "csv: stream the filtered set as a text/csv download, unpaginated (cursor and limit do not apply)."
  }))
})

export class ResponsesApi extends HttpApiGroup.make("responses")
  .add(
    HttpApiEndpoint.get("list")`/surveys/${SurveyId}/responses`
      .setUrlParams(ResponseListParams)
      .addSuccess(ResponsePage)
      .addError(InvalidRequestWire)
      .addError(ForbiddenWire)
      .addError(NotFoundWire)
      .addError(ServiceUnavailableWire)
      .annotate(OpenApi.Summary, "List responses of a survey, oldest first")
      .annotate(
        OpenApi.Description,
        "Ordered by createdAt then id; with updatedAfter, by updatedAt then id (sync by change). " +
          "Cursors are bound to the survey and the filters they were issued for."
      )
      .annotate(OpenApi.Transform, (operation) => ({
        ...operation,
        responses: {
          ...operation.responses,
          200: {
            ...operation.responses?.[200],
            content: {
              ...operation.responses?.[200]?.content,
              "text/csv": {
                schema: {
                  type: "string",
                  description: "With format=csv: RFC 4180 CSV, one line per response, one column per question."
                }
              }
            }
          }
        }
      }))
  )
  .add(
    HttpApiEndpoint.get("get")`/surveys/${SurveyId}/responses/${
      HttpApiSchema.param("responseId", Schema.String.annotations({ description: "Response id." }))
    }`
      .addSuccess(SurveyResponse)
      .addError(ForbiddenWire)
      .addError(NotFoundWire)
      .annotate(OpenApi.Summary, "Get one response")
  )
  .add(
    HttpApiEndpoint.del("delete")`/surveys/${SurveyId}/responses/${
      HttpApiSchema.param("responseId", Schema.String.annotations({ description: "Response id." }))
    }`
      .addSuccess(HttpApiSchema.NoContent)
      .addError(ForbiddenWire)
      .addError(NotFoundWire)
      .annotate(OpenApi.Summary, "Delete one response")
      .annotate(
        OpenApi.Description,
        "Deletes the response and its answers: GET answers 404 from then on, and lists, the CSV export, analytics " +
          "(within their usual freshness) and the survey's responseCount no longer include it. Earlier stored event " +
          "payloads of it are reduced to {responseId, externalUserId: null, response: null}, and a response.deleted " +
          "event is written with the change. Editor keys only."
      )
  )
  .middleware(WriteAccess)
  .middleware(Authorization)
  .annotate(OpenApi.Title, "Responses")
{}
