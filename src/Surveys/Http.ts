/**
 * Measured shortcut: the list handler is a chain of effects, skipping a generator per request, and
 * the answers are pre-encoded (`preEncoded`), skipping the Schema encoding of the declared success.
 * The bytes equal that encoding (test/WireEncoding.test.ts, test/Surveys.test.ts). Measurement:
 * docs/performance.md#measured-shortcuts, "Chains of effects" and "Pre-encoded bodies".
 */
import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { Api } from "../Api.js"
import { CurrentKey } from "../Auth/CurrentKey.js"
import { decodeCursor, encodeCursor, type Position } from "../Domain/Cursor.js"
import { Survey } from "../Domain/Survey.js"
import { preEncoded } from "../Http/PreEncoded.js"
import { SurveyPage } from "./Api.js"
import { SurveyAccess } from "./SurveyAccess.js"
import { SurveyReads } from "./SurveyReads.js"
import { etagOf } from "./SurveyVersion.js"

export const SurveysLive = HttpApiBuilder.group(Api, "surveys", (handlers) =>
  Effect.gen(function*() {
    const repo = yield* SurveyReads
    const access = yield* SurveyAccess
    return handlers
      // A chain of effects, not a generator: the measured shortcut of this file's header.
      .handle("list", ({ urlParams }) =>
        Effect.flatMap(CurrentKey, (key) => {
          const limit = urlParams.limit ?? 25
          const fingerprint = `surveys:${key.workspaceId}`
          const pageAfter = (after: Option.Option<Position>) => {
            const surveyIds = key.surveyIds === null ? null : [...key.surveyIds]
            return Effect.map(repo.list({ workspaceId: key.workspaceId, surveyIds, after, limit: limit + 1 }), (rows) => {
              const page = rows.slice(0, limit)
              const last = page[page.length - 1]
              return preEncoded(SurveyPage, {
                data: page,
                nextCursor: rows.length > limit && last !== undefined
                  ? encodeCursor({ key: last.updatedAt, id: last.id }, fingerprint)
                  : null
              })
            })
          }
          return urlParams.cursor === undefined
            ? pageAfter(Option.none())
            : Effect.flatMap(decodeCursor(urlParams.cursor, fingerprint), (position) => pageAfter(Option.some(position)))
        }))
      .handle("get", ({ path }) =>
        Effect.map(access.require(path.id), (row) =>
          HttpServerResponse.setHeader(preEncoded(Survey, row.toWire()), "etag", etagOf(row.updatedAt))))
  })
)
