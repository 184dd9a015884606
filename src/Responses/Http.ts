import { HttpApiBuilder } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { Api } from "../Api.js"
import { decodeCursor, encodeCursor } from "../Domain/Cursor.js"
import { NotFound } from "../Domain/Errors.js"
import { preEncoded } from "../Http/PreEncoded.js"
import { isApiQuestion, QuestionRepo } from "../Questions/QuestionRepo.js"
import { SurveyAccess } from "../Surveys/SurveyAccess.js"
import { ResponsePage } from "./Api.js"
import { csvResponse } from "./Csv.js"
import { ResponseRepo } from "./ResponseRepo.js"

export const ResponsesLive = HttpApiBuilder.group(Api, "responses", (handlers) =>
  Effect.gen(function*() {
    const access = yield* SurveyAccess
    const responses = yield* ResponseRepo
    const questions = yield* QuestionRepo
    const sql = yield* SqlClient.SqlClient
    return handlers
      .handle("list", ({ path, urlParams }) =>
        Effect.gen(function*() {
          yield* access.require(path.id)
          if (urlParams.format === "csv") {
            const columns = (yield* questions.listForSurvey(path.id)).filter(isApiQuestion)
            return csvResponse(sql, {
              surveyId: path.id,
              questions: columns,
              status: urlParams.status ?? "all",
              createdAfter: urlParams.createdAfter
            })
          }
          const limit = urlParams.limit ?? 25
          const status = urlParams.status ?? "all"
          const fingerprint = `responses:${path.id}:${status}:${urlParams.createdAfter ?? ""}`
          const after = urlParams.cursor === undefined
            ? Option.none()
            : Option.some(yield* decodeCursor(urlParams.cursor, fingerprint))
          const rows = yield* responses.list({
            surveyId: path.id,
            status,
            createdAfter: urlParams.createdAfter,
            after,
            limit: limit + 1
          })
          const page = rows.slice(0, limit)
          const last = page[page.length - 1]
          return preEncoded(ResponsePage, {
            data: yield* responses.withAnswersWire(path.id, page),
            nextCursor: rows.length > limit && last !== undefined
              ? encodeCursor({ key: last.createdAt, id: last.id }, fingerprint)
              : null
          })
        }))
      .handle("get", ({ path }) =>
        Effect.gen(function*() {
          yield* access.require(path.id)
          const found = yield* responses.findById(path.id, path.responseId)
          if (Option.isNone(found)) {
            return yield* new NotFound({ message: "No response with that id in this survey." })
          }
          return found.value
        }))
  })
)
