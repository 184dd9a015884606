/**
 * Measured shortcut: the list handler is a chain of effects, skipping a generator per request, and
 * the answers are pre-encoded (`preEncoded`), skipping the Schema encoding of the declared success.
 * The bytes equal that encoding (test/WireEncoding.test.ts, test/Questions.test.ts). Measurement:
 * docs/performance.md#measured-shortcuts, "Chains of effects" and "Pre-encoded bodies".
 */
import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { Api } from "../Api.js"
import { NotFound } from "../Domain/Errors.js"
import { QuestionList, questionDefinition, SurveyDefinition } from "../Domain/Question.js"
import { preEncoded } from "../Http/PreEncoded.js"
import { SurveyAccess } from "../Surveys/SurveyAccess.js"
import { SurveyReads } from "../Surveys/SurveyReads.js"
import { etagOf } from "../Surveys/SurveyVersion.js"
import { QuestionReads } from "./QuestionReads.js"

export const QuestionsLive = HttpApiBuilder.group(Api, "questions", (handlers) =>
  Effect.gen(function*() {
    const access = yield* SurveyAccess
    const questions = yield* QuestionReads
    const surveys = yield* SurveyReads
    // A chain of effects, not a generator: the measured shortcut of this file's header.
    return handlers.handle("list", ({ path }) =>
      Effect.zipWith(
        access.require(path.id),
        questions.listWire(path.id),
        (survey, data) => HttpServerResponse.setHeader(preEncoded(QuestionList, { data }), "etag", etagOf(survey.updatedAt))
      ))
      .handle("definition", ({ path }) =>
        Effect.gen(function*() {
          yield* access.require(path.id)
          // The survey and its questions in one statement: the ETag names the version the questions are of.
          const found = yield* surveys.findWithQuestions(path.id)
          if (Option.isNone(found)) return yield* new NotFound({ message: `No survey with id ${JSON.stringify(path.id)}.` })
          const { questions: rows, survey } = found.value
          const definition = {
            title: survey.title,
            description: survey.description,
            questions: rows.map(questionDefinition)
          }
          return HttpServerResponse.setHeader(preEncoded(SurveyDefinition, definition), "etag", etagOf(survey.updatedAt))
        }))
  })
)
