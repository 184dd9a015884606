import { HttpApiBuilder, HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Effect, Either, Option, ParseResult, Schema, Stream } from "effect"
import { randomBytes } from "node:crypto"
import { EmbedSessions } from "../Embeds/EmbedSessions.js"
import { answerResponse, Idempotency, idempotencyKeyOf, requestHash } from "../Http/Idempotency.js"
import { InvalidRequest, InvalidRequestWire, type Issue, type NotFound } from "../Domain/Errors.js"
import { exceedsJsonDepth, isJsonContentType, notJsonContentType, tooDeep } from "../Http/JsonBody.js"
import { QuestionRepo } from "../Questions/QuestionRepo.js"
import { SurveyRepo, type SurveyRow } from "../Surveys/SurveyRepo.js"
import { assets } from "./Assets.js"
import { MAX_TEXT_LENGTH } from "./AnswerValidation.js"
import { isOpaqueToken, RespondentTokens } from "./RespondentTokens.js"
import { type Submission, ResponseWriter } from "./ResponseWriter.js"
import { pageHeaders, renderMessagePage, renderSurveyPage, toPageQuestion } from "./SurveyPage.js"

/** Largest accepted respondent API body. */
export const MAX_BODY_BYTES = 256 * 1024

const SubmissionBody = Schema.Struct({
  answers: Schema.optionalWith(
    Schema.Array(Schema.Struct({
      questionId: Schema.String.pipe(Schema.maxLength(200)),
      values: Schema.Array(Schema.String.pipe(Schema.maxLength(MAX_TEXT_LENGTH))).pipe(Schema.maxItems(200))
    })).pipe(Schema.maxItems(500)),
    { default: () => [] }
  ),
  finished: Schema.optionalWith(Schema.Boolean, { default: () => false })
})
const decodeSubmission = Schema.decodeUnknownEither(SubmissionBody, { errors: "all", onExcessProperty: "error" })
const encodeInvalidRequest = Schema.encodeSync(InvalidRequestWire)

const errorJson = (status: number, code: string, message: string) =>
  HttpServerResponse.unsafeJson({ code, message }, { status })

const invalidJson = (error: InvalidRequest) => HttpServerResponse.unsafeJson(encodeInvalidRequest(error), { status: 400 })

const invalidBody = (message: string, issues: ReadonlyArray<Issue> = [{ path: "", message }]) =>
  new InvalidRequest({ message, issues })

/** Reads the body, refusing more than `MAX_BODY_BYTES` whatever the Content-Length claims. */
const readCappedBody = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const declared = Number(request.headers["content-length"] ?? "0")
  const tooLarge = invalidBody(`The body exceeds ${MAX_BODY_BYTES} bytes.`)
  if (Number.isFinite(declared) && declared > MAX_BODY_BYTES) return yield* Effect.fail(tooLarge)
  const chunks: Array<Uint8Array> = []
  let size = 0
  yield* request.stream.pipe(
    Stream.runForEachWhile((chunk) =>
      Effect.sync(() => {
        size += chunk.length
        if (size > MAX_BODY_BYTES) return false
        chunks.push(chunk)
        return true
      })
    ),
    Effect.mapError(() => invalidBody("The body could not be read."))
  )
  if (size > MAX_BODY_BYTES) return yield* Effect.fail(tooLarge)
  return Buffer.concat(chunks).toString("utf8")
})

const parseSubmission = (text: string): Either.Either<Submission, InvalidRequest> => {
  if (exceedsJsonDepth(text)) return Either.left(tooDeep())
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return Either.left(invalidBody("The body is not valid JSON."))
  }
  return Either.mapLeft(decodeSubmission(json), (error) => {
    const issues = ParseResult.ArrayFormatter.formatErrorSync(error).slice(0, 20).map((issue) => ({
      path: issue.path.map(String).join("."),
      message: issue.message.split("\n")[0] ?? ""
    }))
    const first = issues[0]
    return invalidBody(
      first === undefined ? "The body is malformed." : `Invalid \`${first.path || "body"}\`: ${first.message}`,
      issues
    )
  })
}

const wantsJson = (request: HttpServerRequest.HttpServerRequest): boolean => {
  const accept = (request.headers["accept"] ?? "").toLowerCase()
  return accept.includes("application/json") && !accept.includes("text/html")
}

const newNonce = () => randomBytes(16).toString("base64")

const messagePage = (status: number, code: string, title: string, message: string) =>
  Effect.map(HttpServerRequest.HttpServerRequest, (request) =>
    wantsJson(request)
      ? errorJson(status, code, message)
      : HttpServerResponse.html(renderMessagePage(title, message)).pipe(
        HttpServerResponse.setStatus(status),
        HttpServerResponse.setHeaders(pageHeaders(null))
      ))

const notAccepting = (survey: SurveyRow) =>
  survey.status === "closed"
    ? messagePage(410, "gone", "This survey is closed", "This survey no longer accepts responses. Thank you for your interest.")
    : messagePage(404, "not_found", "Survey not found", "There is no survey at this address.")

/**
 * The respondent side: survey pages (`/s/{surveyId}`, `/embed/{token}`), the respondent API
 * (`/respond/v1/responses`), and the pages' static assets.
 */
export const RespondentRoutes = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const surveys = yield* SurveyRepo
    const questions = yield* QuestionRepo
    const tokens = yield* RespondentTokens
    const embeds = yield* EmbedSessions
    const writer = yield* ResponseWriter
    const idempotency = yield* Idempotency

    const liveSurvey = (surveyId: string) =>
      Effect.map(surveys.findById(surveyId), Option.filter((s) => s.trashed === 0))

    const renderSurvey = (survey: SurveyRow, respondentToken: string) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const rows = yield* questions.listForSurvey(survey.id)
        const pageQuestions = rows.map(toPageQuestion)
        if (wantsJson(request)) {
          return HttpServerResponse.unsafeJson(
            { survey: survey.toApi(), questions: pageQuestions, respondentToken },
            { headers: { "cache-control": "no-store" } }
          )
        }
        const nonce = newNonce()
        return HttpServerResponse.html(
          renderSurveyPage({ survey: survey.toApi(), questions: pageQuestions, respondentToken, nonce })
        ).pipe(HttpServerResponse.setHeaders(pageHeaders(nonce)))
      })

    const publicPage = Effect.gen(function*() {
      const { surveyId } = yield* HttpRouter.params
      const found = yield* liveSurvey(surveyId ?? "")
      if (Option.isNone(found)) {
        return yield* messagePage(404, "not_found", "Survey not found", "There is no survey at this address.")
      }
      if (found.value.status !== "published") return yield* notAccepting(found.value)
      const token = yield* tokens.issue({ surveyId: found.value.id, embedSessionId: null, externalUserId: null })
      return yield* renderSurvey(found.value, token)
    })

    const embedPage = Effect.gen(function*() {
      const { token } = yield* HttpRouter.params
      const refused = (tag: "Unknown" | "Expired" | "Used") =>
        tag === "Unknown"
          ? messagePage(404, "not_found", "Link not found", "This survey link is not valid. Please open the survey again from where you found it.")
          : messagePage(
            410,
            "gone",
            tag === "Used" ? "This link was already used" : "This link has expired",
            "Survey links work once and for one hour. Please open the survey again from where you found it."
          )
      if (token === undefined || !isOpaqueToken(token)) return yield* refused("Unknown")
      const session = yield* Effect.either(embeds.lookup(token))
      if (Either.isLeft(session)) return yield* refused(session.left._tag)
      const found = yield* liveSurvey(session.right.surveyId)
      if (Option.isNone(found)) return yield* refused("Unknown")
      if (found.value.status !== "published") return yield* notAccepting(found.value)
      // The load is spent only together with the respondent token it hands out.
      const loaded = yield* embeds.consume(session.right).pipe(
        Effect.zipRight(tokens.issue({
          surveyId: found.value.id,
          embedSessionId: session.right.id,
          externalUserId: session.right.externalUserId
        })),
        sql.withTransaction,
        Effect.catchTag("SqlError", Effect.die),
        Effect.either
      )
      if (Either.isLeft(loaded)) return yield* refused(loaded.left._tag)
      return yield* renderSurvey(found.value, loaded.right)
    })

    const respondent = Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers["authorization"] ?? "")
      const token = match?.[1]
      const found = token !== undefined && isOpaqueToken(token) ? yield* tokens.resolve(token) : Option.none()
      return found
    })

    const unauthorized = errorJson(
      401,
      "unauthorized",
      "Send the respondentToken of a survey page as `Authorization: Bearer <respondentToken>`; it may have expired."
    )

    const answerWith = <A, R>(
      write: Effect.Effect<A, InvalidRequest | NotFound, R>,
      ok: (a: A) => HttpServerResponse.HttpServerResponse
    ) =>
      write.pipe(
        Effect.map(ok),
        Effect.catchTags({
          InvalidRequest: (error) => Effect.succeed(invalidJson(error)),
          NotFound: (error) => Effect.succeed(errorJson(404, "not_found", error.message))
        })
      )

    const submission = Effect.gen(function*() {
      const contentType = (yield* HttpServerRequest.HttpServerRequest).headers["content-type"]
      if (!isJsonContentType(contentType)) return yield* notJsonContentType(contentType ?? "")
      return yield* Effect.flatMap(readCappedBody, (text) => parseSubmission(text))
    })

    const createResponse = Effect.gen(function*() {
      const who = yield* respondent
      if (Option.isNone(who)) return unauthorized
      const request = yield* HttpServerRequest.HttpServerRequest
      const started = Effect.gen(function*() {
        const key = yield* idempotencyKeyOf(request.headers["idempotency-key"])
        const body = yield* submission
        return yield* idempotency.once(
          {
            scope: { _tag: "Respondent", tokenHash: who.value.tokenHash },
            key,
            request: requestHash("POST", "/respond/v1/responses", body)
          },
          Effect.map(writer.create(who.value, body), (saved) => ({
            status: 201,
            body: JSON.stringify({ responseId: saved.responseId })
          }))
        )
      })
      return yield* answerWith(started, answerResponse)
    })

    const updateResponse = Effect.gen(function*() {
      const who = yield* respondent
      if (Option.isNone(who)) return unauthorized
      const { responseId } = yield* HttpRouter.params
      return yield* answerWith(
        Effect.flatMap(submission, (body) =>
          Effect.map(writer.update(who.value, responseId ?? "", body), (saved) => ({ ...saved, completed: body.finished }))),
        (saved) => HttpServerResponse.unsafeJson({ responseId: saved.responseId, completed: saved.completed })
      )
    })

    const asset = Effect.gen(function*() {
      const { name } = yield* HttpRouter.params
      const found = assets.get(name ?? "")
      return found === undefined
        ? errorJson(404, "not_found", "No such asset.")
        : HttpServerResponse.text(found.body, {
          contentType: found.contentType,
          headers: { "cache-control": "public, max-age=3600", "x-content-type-options": "nosniff" }
        })
    })

    yield* router.get("/s/:surveyId", publicPage)
    yield* router.get("/embed/:token", embedPage)
    yield* router.post("/respond/v1/responses", createResponse)
    yield* router.patch("/respond/v1/responses/:responseId", updateResponse)
    yield* router.get("/assets/:name", asset)
  })
)
