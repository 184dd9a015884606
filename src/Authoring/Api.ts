import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Authorization } from "../Auth/Authorization.js"
import { WriteAccess } from "../Auth/WriteAccess.js"
import { boundedString } from "../Domain/Bounds.js"
import { Forbidden, InvalidRequest, NotFound, PreconditionFailed } from "../Domain/Errors.js"
import { QuestionList } from "../Domain/Question.js"
import { MAX_DESCRIPTION_LENGTH, MAX_TITLE_LENGTH, Survey } from "../Domain/Survey.js"
import { documentReplayHeader, IdempotencyHeaders } from "../Http/Idempotency.js"
import { JsonBody } from "../Http/JsonBody.js"
import { SurveyIdParam } from "../Surveys/Api.js"
import { documentEtag } from "../Surveys/SurveyVersion.js"
import { QuestionInputList } from "./QuestionRules.js"

/** Authoring bodies refuse a field they do not name, with its path: a typo must not pass silently. */
const strict = { parseOptions: { onExcessProperty: "error", errors: "all" } } as const

const Title = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(MAX_TITLE_LENGTH)).annotations({
  description: "Title as shown to respondents, 1 to 500 characters.",
  message: () => ({ message: "must be text of 1 to 500 characters", override: true })
})

const Description = Schema.NullOr(Schema.String.pipe(
  Schema.maxLength(MAX_DESCRIPTION_LENGTH, { message: () => "must be text of at most 5,000 characters, or null" })
)).annotations({
  description: "Up to 5,000 characters, or null for none."
})

export const SurveyCreate = Schema.Struct({
  title: Title,
  description: Schema.optionalWith(Description, { exact: true }),
  questions: Schema.optionalWith(QuestionInputList, { exact: true }).annotations({ description: "The questions in order; none when absent." })
}).annotations({ identifier: "SurveyCreate", ...strict })

export const SurveyChange = Schema.Struct({
  title: Schema.optionalWith(Title, { exact: true }),
  description: Schema.optionalWith(Description, { exact: true })
}).annotations({ identifier: "SurveyChange", description: "The fields to change; the others stay.", ...strict })

export const QuestionListInput = Schema.Struct({
  questions: QuestionInputList
}).annotations({ identifier: "QuestionListInput", ...strict })

export const IfMatchHeaders = Schema.Struct({
  "if-match": Schema.optional(boundedString(200).annotations({
    description: "The ETag of GET /surveys/{id} or GET /surveys/{id}/questions: the change is made only if the " +
      "survey is still at that version, else 412 precondition_failed and nothing changes."
  }))
})

const creation = "Creates a survey in `draft`, with its questions when given. Editor keys of the whole workspace " +
  "only (a key limited to some surveys gets 403). Safe to retry with an Idempotency-Key (per workspace, 24 hours)."

/** `POST /surveys/{id}/publish` and `/close`: a status move, answered with the survey. */
const statusMove = <const Name extends "publish" | "close">(name: Name, summary: string, description: string) =>
  HttpApiEndpoint.post(name, `/surveys/:id/${name}`)
    .setPath(Schema.Struct({ id: SurveyIdParam }))
    .setHeaders(IfMatchHeaders)
    .addSuccess(Survey)
    .addError(NotFound.Wire)
    .addError(PreconditionFailed.Wire)
    .annotate(OpenApi.Summary, summary)
    .annotate(OpenApi.Description, `${description} The answer's ETag names the survey's new version.`)
    .annotate(OpenApi.Transform, documentEtag(200))

export class AuthoringApi extends HttpApiGroup.make("authoring")
  .add(
    HttpApiEndpoint.post("create", "/surveys")
      .setPayload(SurveyCreate)
      .setHeaders(IdempotencyHeaders)
      .addSuccess(Survey, { status: 201 })
      .annotate(OpenApi.Summary, "Create a survey")
      .annotate(OpenApi.Description, creation)
      .annotate(OpenApi.Transform, documentReplayHeader(201))
      .annotate(OpenApi.Transform, documentEtag(201))
  )
  .add(
    HttpApiEndpoint.patch("update")`/surveys/${SurveyIdParam}`
      .setPayload(SurveyChange)
      .setHeaders(IfMatchHeaders)
      .addSuccess(Survey)
      .addError(NotFound.Wire)
      .addError(PreconditionFailed.Wire)
      .annotate(OpenApi.Summary, "Change a survey's title or description")
      .annotate(OpenApi.Description, "Fields left out stay as they are. The answer's ETag names the survey's new version.")
      .annotate(OpenApi.Transform, documentEtag(200))
  )
  .add(
    HttpApiEndpoint.put("replaceQuestions")`/surveys/${SurveyIdParam}/questions`
      .setPayload(QuestionListInput)
      .setHeaders(IfMatchHeaders)
      .addSuccess(QuestionList)
      .addError(NotFound.Wire)
      .addError(PreconditionFailed.Wire)
      .annotate(OpenApi.Summary, "Replace the questions of a survey")
      .annotate(
        OpenApi.Description,
        "Replaces the whole list in one change, in any status, and answers it as GET does (sections left out). " +
          "A question id kept keeps its answers; a question left out is deleted, and its answers read with null " +
          "fieldId and type. A question with answers cannot change its type (400 at questions.N.type); its options " +
          "may change, stored answers keeping their values. Analytics and the CSV columns follow the new list. " +
          "The answer's ETag names the survey's new version."
      )
      .annotate(OpenApi.Transform, documentEtag(200))
  )
  .add(statusMove(
    "publish",
    "Publish a survey",
    "From draft or closed, and only with at least one question; writes survey.published. A published survey " +
      "answers 200 and nothing is written."
  ))
  .add(statusMove(
    "close",
    "Close a survey",
    "From published; writes survey.closed. A closed survey answers 200 and nothing is written."
  ))
  .add(
    HttpApiEndpoint.del("trash")`/surveys/${SurveyIdParam}`
      .setHeaders(IfMatchHeaders)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(NotFound.Wire)
      .addError(PreconditionFailed.Wire)
      .annotate(OpenApi.Summary, "Move a survey to the trash")
      .annotate(OpenApi.Description, "The survey then answers 404 everywhere, as a trashed survey does.")
  )
  // Every authoring call may be refused its body (400) or its key (403).
  .addError(InvalidRequest.Wire)
  .addError(Forbidden.Wire)
  .middleware(JsonBody)
  .middleware(WriteAccess)
  .middleware(Authorization)
  .annotate(OpenApi.Title, "Authoring")
  .annotate(OpenApi.Description, "Creating and editing surveys and their questions, publishing, closing and trashing them.")
{}
