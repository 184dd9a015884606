import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { QuestionList } from "../Domain/Question.js"
import { preEncoded } from "../Http/PreEncoded.js"
import { SurveyAccess } from "../Surveys/SurveyAccess.js"
import { QuestionRepo } from "./QuestionRepo.js"

export const QuestionsLive = HttpApiBuilder.group(Api, "questions", (handlers) =>
  Effect.gen(function*() {
    const access = yield* SurveyAccess
    const questions = yield* QuestionRepo
    return handlers.handle("list", ({ path }) =>
      Effect.gen(function*() {
        yield* access.require(path.id)
        return preEncoded(QuestionList, { data: yield* questions.listWire(path.id) })
      }))
  })
)
