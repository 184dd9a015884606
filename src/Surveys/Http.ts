import { HttpApiBuilder } from "@effect/platform"
import { Effect, Option } from "effect"
import { Api } from "../Api.js"
import { CurrentKey } from "../Auth/CurrentKey.js"
import { decodeCursor, encodeCursor } from "../Domain/Cursor.js"
import { Survey } from "../Domain/Survey.js"
import { preEncoded } from "../Http/PreEncoded.js"
import { SurveyPage } from "./Api.js"
import { SurveyAccess } from "./SurveyAccess.js"
import { SurveyRepo } from "./SurveyRepo.js"

export const SurveysLive = HttpApiBuilder.group(Api, "surveys", (handlers) =>
  Effect.gen(function*() {
    const repo = yield* SurveyRepo
    const access = yield* SurveyAccess
    return handlers
      .handle("list", ({ urlParams }) =>
        Effect.gen(function*() {
          const key = yield* CurrentKey
          const limit = urlParams.limit ?? 25
          const fingerprint = `surveys:${key.workspaceId}`
          const after = urlParams.cursor === undefined
            ? Option.none()
            : Option.some(yield* decodeCursor(urlParams.cursor, fingerprint))
          const surveyIds = key.surveyIds === null ? null : [...key.surveyIds]
          const rows = yield* repo.list({ workspaceId: key.workspaceId, surveyIds, after, limit: limit + 1 })
          const page = rows.slice(0, limit)
          const last = page[page.length - 1]
          return preEncoded(SurveyPage, {
            data: page,
            nextCursor: rows.length > limit && last !== undefined
              ? encodeCursor({ key: last.updatedAt, id: last.id }, fingerprint)
              : null
          })
        }))
      .handle("get", ({ path }) => Effect.map(access.require(path.id), (row) => preEncoded(Survey, row.toWire())))
  })
)
