/**
 * Measured shortcut: the responses list is a chain of effects, skipping a generator per request,
 * and answers JSON text assembled from the stored renderings (`preEncodedJson`), skipping the
 * Schema encoding of the page. The text equals that encoding (test/WireEncoding.test.ts).
 * Measurement: docs/performance.md#measured-shortcuts, "Chains of effects" and "Pre-encoded bodies".
 */
import { HttpApiBuilder, type HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { Api } from "../Api.js"
import { CurrentKey } from "../Auth/CurrentKey.js"
import { decodeCursor, encodeCursor, type Position } from "../Domain/Cursor.js"
import { InvalidRequest, NotFound } from "../Domain/Errors.js"
import { SurveyResponse } from "../Domain/Response.js"
import type { SurveyId } from "../Domain/Ids.js"
import { pageJson, preEncodedJson } from "../Http/PreEncoded.js"
import { addAnswerHeaders } from "../Http/RequestId.js"
import { QuestionReads } from "../Questions/QuestionReads.js"
import { isApiQuestion } from "../Questions/QuestionWire.js"
import { SurveyAccess } from "../Surveys/SurveyAccess.js"
import { isCsvList, ResponseExportParams, ResponsePage } from "./Api.js"
import { EXPORT_RETRY_AFTER_SECONDS, ExportSlots } from "./ExportSlots.js"
import { ResponseDeletion } from "./ResponseDeletion.js"
import type { ListOrder } from "./ResponseRepo.js"
import { ResponseReads } from "./ResponseReads.js"

export const ResponsesLive = HttpApiBuilder.group(Api, "responses", (handlers) =>
  Effect.gen(function*() {
    const access = yield* SurveyAccess
    const responses = yield* ResponseReads
    const questions = yield* QuestionReads
    const slots = yield* ExportSlots
    const deletion = yield* ResponseDeletion
    /** The survey, once the key may read it and the filters go together. */
    const filtered = Effect.fnUntraced(function*(surveyId: SurveyId, filters: typeof ResponseExportParams.Type) {
      yield* access.require(surveyId)
      if (filters.createdAfter !== undefined && filters.updatedAfter !== undefined) {
        return yield* new InvalidRequest({
          message: "Use either createdAfter or updatedAfter, not both: each has its own order.",
          issues: [{ path: "updatedAfter", message: "cannot be combined with createdAfter" }]
        })
      }
    })

    /** The refusal of an export beyond the bounds carries `Retry-After` beside the quota's headers. */
    const retryLater = addAnswerHeaders({ "retry-after": String(EXPORT_RETRY_AFTER_SECONDS) })

    const exportCsv = Effect.fnUntraced(function*(surveyId: SurveyId, filters: typeof ResponseExportParams.Type) {
      // Held in the request's scope, which the server closes when the body's stream ends: read to
      // its end, failed, or cancelled by a client that went away.
      yield* Effect.tapError(slots.hold((yield* CurrentKey).accountId), () => retryLater)
      const columns = (yield* questions.listForSurvey(surveyId)).filter(isApiQuestion)
      return responses.csv({
        surveyId,
        questions: columns,
        status: filters.status ?? "all",
        createdAfter: filters.createdAfter,
        updatedAfter: filters.updatedAfter
      })
    })

    /** The list's answer: a page, or the export. */
    type Listed = Effect.Effect<
      HttpServerResponse.HttpServerResponse,
      InvalidRequest | Effect.Effect.Error<ReturnType<typeof exportCsv>>,
      Effect.Effect.Context<ReturnType<typeof exportCsv>>
    >

    return handlers
      .handle("exportCsv", ({ path, urlParams }) =>
        Effect.zipRight(filtered(path.id, urlParams), exportCsv(path.id, urlParams)))
      // A chain of effects, not a generator: the measured shortcut of this file's header.
      .handle("list", ({ path, urlParams }) =>
        Effect.flatMap(filtered(path.id, urlParams), (): Listed => {
          if (isCsvList(urlParams)) return exportCsv(path.id, urlParams)
          const status = urlParams.status ?? "all"
          const limit = urlParams.limit ?? 25
          const order: ListOrder = urlParams.updatedAfter === undefined ? "createdAt" : "updatedAt"
          const from = urlParams.updatedAfter ?? urlParams.createdAfter
          // Cursors of the two orders never pass for each other.
          const fingerprint = order === "createdAt"
            ? `responses:${path.id}:${status}:${from ?? ""}`
            : `responses-by-change:${path.id}:${status}:${from ?? ""}`
          const pageAfter = (after: Option.Option<Position>) =>
            Effect.map(responses.page({ surveyId: path.id, status, order, from, after, limit }), (page) => {
              const nextCursor = page.more && page.last !== undefined
                ? encodeCursor({ key: page.last[order], id: page.last.id }, fingerprint)
                : null
              return preEncodedJson(ResponsePage, pageJson(page.items, nextCursor))
            })
          return urlParams.cursor === undefined
            ? pageAfter(Option.none())
            : Effect.flatMap(decodeCursor(urlParams.cursor, fingerprint), (position) => pageAfter(Option.some(position)))
        }))
      .handle("get", ({ path }) =>
        Effect.gen(function*() {
          yield* access.require(path.id)
          const found = yield* responses.findJson(path.id, path.responseId)
          if (Option.isNone(found)) {
            return yield* new NotFound({ message: "No response with that id in this survey." })
          }
          return preEncodedJson(SurveyResponse, found.value)
        }))
      .handle("delete", ({ path }) =>
        Effect.gen(function*() {
          const survey = yield* access.require(path.id)
          const deleted = yield* deletion.deleteOne({
            workspaceId: survey.workspaceId,
            surveyId: survey.id,
            responseId: path.responseId
          })
          if (!deleted) return yield* new NotFound({ message: "No response with that id in this survey." })
        }))
  })
)
