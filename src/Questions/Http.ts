// Measured shortcuts (docs/architecture.md#measured-shortcuts): `bun run bench:read`; guarded by test/Questions.test.ts and test/WireEncoding.test.ts.
import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { QuestionList } from "../Domain/Question.js"
import { preEncoded } from "../Http/PreEncoded.js"
import { SurveyAccess } from "../Surveys/SurveyAccess.js"
import { etagOf } from "../Surveys/SurveyVersion.js"
import { QuestionRepo } from "./QuestionRepo.js"

export const QuestionsLive = HttpApiBuilder.group(Api, "questions", (handlers) =>
  Effect.gen(function*() {
    const access = yield* SurveyAccess
    const questions = yield* QuestionRepo
    // A chain of effects, not a generator (docs/architecture.md#measured-shortcuts).
    return handlers.handle("list", ({ path }) =>
      Effect.zipWith(
        access.require(path.id),
        questions.listWire(path.id),
        (survey, data) => HttpServerResponse.setHeader(preEncoded(QuestionList, { data }), "etag", etagOf(survey.updatedAt))
      ))
  })
)
