import { SurveyId } from "../Domain/Ids.js"
import { HttpApiBuilder, HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Either, Option } from "effect"
import { randomBytes } from "node:crypto"
import { EmbedSessions } from "../Embeds/EmbedSessions.js"
import type { QuestionRow } from "../Questions/QuestionRepo.js"
import { SurveyReads } from "../Surveys/SurveyReads.js"
import type { SurveyRow } from "../Surveys/SurveyRepo.js"
import type { RateLimited } from "../Domain/Errors.js"
import { assets } from "./Assets.js"
import { EmbedRedemption } from "./EmbedRedemption.js"
import { RespondentLimits } from "./RespondentLimits.js"
import { isOpaqueToken, RespondentTokens } from "./RespondentTokens.js"
import { pageHeaders, renderMessagePage, renderSurveyPage, toPageQuestion } from "./SurveyPage.js"

const errorJson = (status: number, code: string, message: string) =>
  HttpServerResponse.unsafeJson({ code, message }, { status })

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

/** A refused page load: 429 (its `Retry-After` is set by the limiter), as a page or as JSON. */
const refusedLoad = (error: RateLimited) => messagePage(429, "rate_limited", "Too many requests", error.message)

const notAccepting = (survey: SurveyRow) =>
  survey.status === "closed"
    ? messagePage(410, "gone", "This survey is closed", "This survey no longer accepts responses. Thank you for your interest.")
    : messagePage(404, "not_found", "Survey not found", "There is no survey at this address.")

/**
 * The survey pages (`/s/{surveyId}`, `/embed/{token}`) and their static assets. The respondent
 * API they call is declared in the HttpApi (src/Respondents/Api.ts).
 */
export const RespondentRoutes = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const surveys = yield* SurveyReads
    const tokens = yield* RespondentTokens
    const embeds = yield* EmbedSessions
    const redemption = yield* EmbedRedemption
    const limits = yield* RespondentLimits

    // The survey with its questions, read together: the page shows them as of one moment.
    const liveSurvey = (surveyId: string) =>
      Effect.map(surveys.findWithQuestions(SurveyId.make(surveyId)), Option.filter((s) => !s.survey.trashed))

    const renderSurvey = (
      { questions, survey }: { readonly survey: SurveyRow; readonly questions: ReadonlyArray<QuestionRow> },
      respondentToken: string
    ) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const pageQuestions = questions.map(toPageQuestion)
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
      yield* limits.address
      const { surveyId } = yield* HttpRouter.params
      const found = yield* liveSurvey(surveyId ?? "")
      if (Option.isNone(found)) {
        return yield* messagePage(404, "not_found", "Survey not found", "There is no survey at this address.")
      }
      const { survey } = found.value
      if (survey.status !== "published") return yield* notAccepting(survey)
      yield* limits.survey(survey.id)
      const token = yield* tokens.issuePage(survey.id)
      return yield* renderSurvey(found.value, token)
    }).pipe(Effect.catchTag("RateLimited", refusedLoad))

    const embedPage = Effect.gen(function*() {
      yield* limits.address
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
      const { survey } = found.value
      if (survey.status !== "published") return yield* notAccepting(survey)
      yield* limits.survey(survey.id)
      // The load is spent only together with the respondent token it hands out.
      const loaded = yield* Effect.either(redemption.redeem(session.right))
      if (Either.isLeft(loaded)) return yield* refused(loaded.left._tag)
      return yield* renderSurvey(found.value, loaded.right)
    }).pipe(Effect.catchTag("RateLimited", refusedLoad))

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
    yield* router.get("/assets/:name", asset)
  })
)
