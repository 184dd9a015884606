import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { ParseResult, Schema, SchemaAST } from "effect"
import { Authorization } from "../Auth/Authorization.js"
import { WriteAccess } from "../Auth/WriteAccess.js"
import { Forbidden, InvalidRequest, NotFound, ServiceUnavailable } from "../Domain/Errors.js"
import { Cursor, Limit, Page } from "../Domain/Page.js"
import { ResponseStatusFilter, SurveyResponse } from "../Domain/Response.js"
import { ResponseId } from "../Domain/Ids.js"
import { IsoInstant } from "../Domain/Time.js"
import { SurveyIdParam } from "../Surveys/Api.js"

export const ResponsePage = Page(SurveyResponse, "ResponsePage")

/** The filters the page and the CSV export share. */
const ResponseFilters = {
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
  }))
}

/** The JSON page's parameters. */
export const ResponsePageParams = Schema.Struct({
  limit: Schema.optional(Limit),
  cursor: Schema.optional(Cursor),
  ...ResponseFilters
})

/** The CSV export's parameters: the filters alone. `cursor` and `limit` do not apply to it (api-v1 §8). */
export const ResponseExportParams = Schema.Struct(ResponseFilters)

/** The list's query as the OpenAPI document describes it: the page's parameters and `format`. */
const ResponseListQuery = Schema.Struct({
  ...ResponsePageParams.fields,
  format: Schema.optional(Schema.Literal("csv"))
})

const CsvListParams = Schema.Struct({ ...ResponseExportParams.fields, format: Schema.Literal("csv") })

const ListParamsSets = Schema.Union(CsvListParams, ResponsePageParams)

const UrlParams = Schema.Record({ key: Schema.String, value: Schema.Union(Schema.String, Schema.Array(Schema.String)) })

const decodeCsvList = ParseResult.decodeUnknown(CsvListParams)
const decodePageList = ParseResult.decodeUnknown(ResponseListQuery)
const encodeList = ParseResult.encode(ResponseListQuery)

/**
 * `GET …/responses` takes one of two parameter sets: with `format=csv` the export's, read as
 * `responses.csv` reads them, so that a `cursor` or `limit` the page would refuse (a `limit` of
 * 1000, a stale cursor) does not fail the download; otherwise the page's, where `format` can
 * only be absent. The OpenAPI document shows the one query both are read from.
 */
export const ResponseListParams = Schema.transformOrFail(UrlParams, Schema.typeSchema(ListParamsSets), {
  strict: true,
  decode: (query) =>
    query.format === "csv"
      ? decodeCsvList(query)
      : ParseResult.map(decodePageList(query), ({ format: _, ...page }) => page),
  encode: (params) =>
    ParseResult.map(encodeList(params), (query) => {
      const sent: Record<string, string> = {}
      for (const [name, value] of Object.entries(query)) if (value !== undefined) sent[name] = value
      return sent
    })
}).annotations({ [SchemaAST.SurrogateAnnotationId]: ResponseListQuery.ast })

/** Whether the list was asked for the CSV export. */
export const isCsvList = (
  params: typeof ResponseListParams.Type
): params is typeof CsvListParams.Type => "format" in params && params.format === "csv"

/** RFC 4180 CSV, as the export streams it. */
export const ResponsesCsv = HttpApiSchema.Text({ contentType: "text/csv" }).annotations({
  description: "RFC 4180 CSV (UTF-8, CRLF): responseId, surveyId, externalUserId, completed, createdAt, " +
    "completedAt, then one column per question in survey order. Served as an attachment."
})

const isFormat = (parameter: unknown) =>
  typeof parameter === "object" && parameter !== null && "name" in parameter && parameter.name === "format"

export class ResponsesApi extends HttpApiGroup.make("responses")
  .add(
    HttpApiEndpoint.get("list")`/surveys/${SurveyIdParam}/responses`
      .setUrlParams(ResponseListParams)
      .addSuccess(ResponsePage)
      .addError(InvalidRequest.Wire)
      .addError(Forbidden.Wire)
      .addError(NotFound.Wire)
      .addError(ServiceUnavailable.Wire)
      .annotate(OpenApi.Summary, "List responses of a survey, oldest first")
      .annotate(
        OpenApi.Description,
        "Ordered by createdAt then id; with updatedAfter, by updatedAt then id (sync by change). " +
          "Cursors are bound to the survey and the filters they were issued for.\n\n" +
          "This operation always answers a JSON page. The same path with `format=csv` answers the CSV export " +
          "instead (text/csv, unpaginated; cursor and limit do not apply): that request is documented as the " +
          "operation `responses.exportCsv` (`GET /api/v1/surveys/{id}/responses.csv`), which answers the same " +
          "bytes, so that a generated client types this operation's answer as the page."
      )
      // `format` selects the other representation; it is documented with that operation.
      .annotate(OpenApi.Transform, (operation) => ({
        ...operation,
        parameters: Array.isArray(operation.parameters)
          ? operation.parameters.filter((parameter) => !isFormat(parameter))
          : operation.parameters
      }))
  )
  .add(
    HttpApiEndpoint.get("exportCsv")`/surveys/${SurveyIdParam}/responses.csv`
      .setUrlParams(ResponseExportParams)
      .addSuccess(ResponsesCsv)
      .addError(InvalidRequest.Wire)
      .addError(Forbidden.Wire)
      .addError(NotFound.Wire)
      .addError(ServiceUnavailable.Wire)
      .annotate(OpenApi.Summary, "Export responses of a survey as CSV")
      .annotate(
        OpenApi.Description,
        "The filtered set, unpaginated, streamed row by row as a CSV download. " +
          "`GET /api/v1/surveys/{id}/responses?format=csv` (api-v1 §4.3) is the same request and answers the same bytes; " +
          "cursor and limit are ignored on both. Exports that stream at once are bounded per account and per server process; " +
          "beyond either bound the export answers 503 service_unavailable with Retry-After."
      )
  )
  .add(
    HttpApiEndpoint.get("get")`/surveys/${SurveyIdParam}/responses/${
      HttpApiSchema.param("responseId", ResponseId.annotations({ description: "Response id." }))
    }`
      .addSuccess(SurveyResponse)
      .addError(InvalidRequest.Wire)
      .addError(Forbidden.Wire)
      .addError(NotFound.Wire)
      .annotate(OpenApi.Summary, "Get one response")
  )
  .add(
    HttpApiEndpoint.del("delete")`/surveys/${SurveyIdParam}/responses/${
      HttpApiSchema.param("responseId", ResponseId.annotations({ description: "Response id." }))
    }`
      .addSuccess(HttpApiSchema.NoContent)
      .addError(InvalidRequest.Wire)
      .addError(Forbidden.Wire)
      .addError(NotFound.Wire)
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
  .annotate(OpenApi.Description, "A survey's responses: pages synced by creation or change, one response, deletion, and the CSV export.")
{}
