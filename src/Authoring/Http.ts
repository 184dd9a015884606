import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect, Option, Schema } from "effect"
import { Api } from "../Api.js"
import { QuestionList } from "../Domain/Question.js"
import { Survey } from "../Domain/Survey.js"
import { answerResponse, Idempotency, idempotencyKeyOf, requestHash } from "../Http/Idempotency.js"
import { preEncoded } from "../Http/PreEncoded.js"
import type { SurveyRow } from "../Surveys/SurveyRepo.js"
import { etagOf } from "../Surveys/SurveyVersion.js"
import { SurveyCreate } from "./Api.js"
import { Authoring, wholeWorkspaceKey } from "./Authoring.js"

const encodeCreate = Schema.encodeSync(SurveyCreate)

/** The version of the survey a stored creation answer holds: its ETag goes with the answer, replayed or not. */
const createdVersion = Schema.decodeUnknownOption(Schema.parseJson(Schema.Struct({ updatedAt: Schema.String })))

/** A survey answer with its new version, for the next `If-Match`. */
const surveyAnswer = (row: SurveyRow) =>
  HttpServerResponse.setHeader(preEncoded(Survey, row.toWire()), "etag", etagOf(row.updatedAt))

export const AuthoringLive = HttpApiBuilder.group(Api, "authoring", (handlers) =>
  Effect.gen(function*() {
    const authoring = yield* Authoring
    const idempotency = yield* Idempotency
    return handlers
      .handle("create", ({ headers, payload }) =>
        Effect.gen(function*() {
          const key = yield* idempotencyKeyOf(headers["idempotency-key"])
          // A key limited to some surveys is refused before a stored answer could be replayed to it.
          const current = yield* wholeWorkspaceKey
          const create = Effect.map(authoring.create(payload), (row) => ({
            status: 201,
            body: JSON.stringify(row.toWire())
          }))
          const answer = yield* idempotency.once({
            scope: { _tag: "Workspace", workspaceId: current.workspaceId },
            key,
            request: requestHash("POST", "/surveys", encodeCreate(payload))
          }, create)
          const response = answerResponse(answer)
          return Option.match(createdVersion(answer.body), {
            onNone: () => response,
            onSome: ({ updatedAt }) => HttpServerResponse.setHeader(response, "etag", etagOf(updatedAt))
          })
        }))
      .handle("update", ({ headers, path, payload }) =>
        Effect.map(authoring.update(path.id, headers["if-match"], payload), surveyAnswer))
      .handle("replaceQuestions", ({ headers, path, payload }) =>
        Effect.map(
          authoring.replaceQuestions(path.id, headers["if-match"], payload.questions),
          ({ questions, survey }) =>
            HttpServerResponse.setHeader(preEncoded(QuestionList, { data: questions }), "etag", etagOf(survey.updatedAt))
        ))
      .handle("publish", ({ headers, path }) => Effect.map(authoring.move(path.id, headers["if-match"], "publish"), surveyAnswer))
      .handle("close", ({ headers, path }) => Effect.map(authoring.move(path.id, headers["if-match"], "close"), surveyAnswer))
      .handle("trash", ({ headers, path }) => Effect.asVoid(authoring.trash(path.id, headers["if-match"])))
  })
)
