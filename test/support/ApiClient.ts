import { FetchHttpClient, HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { Effect, Schema } from "effect"
import { Api } from "../../src/Api.js"
import { TestClockServiceApi } from "../../src/TestClock/Api.js"
import { request } from "./ServeProcess.js"

const bearer = (token?: string) =>
  token === undefined ? {} : { transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(token)) }

/**
 * The typed client of the service's HttpApi (`src/Api.ts`), pointed at the test server, sending
 * `token` as its bearer credential: an API key, or a respondent token for the respondent API.
 * Without a token it sends no Authorization header.
 */
export const clientFor = (token?: string) => HttpApiClient.make(Api, bearer(token))

/**
 * The typed client of a serve process at `base` (test/support/ServeProcess.ts), over `fetch`: the
 * service's API with the test clock's (`TestClockServiceApi`), which a process without
 * `--test-clock` answers 404.
 */
export const clientAt = (base: string, token?: string) =>
  HttpApiClient.make(TestClockServiceApi, { baseUrl: base, ...bearer(token) }).pipe(
    Effect.provide(FetchHttpClient.layer)
  )

const SurveyPage = Schema.parseJson(Schema.Struct({ respondentToken: Schema.String }))

/**
 * A response to `srv_short` (test/support/RespondentFixtures.ts) completed at the serve process at
 * `base` as a survey page would: the page's respondent token (raw: the page is outside the HttpApi),
 * then the respondent API through the typed client. Answers the response's id.
 */
export const completeShortAt = (base: string) =>
  Effect.gen(function*() {
    const page = yield* request(`${base}/s/srv_short`, { headers: { accept: "application/json" } })
    const respondent = yield* clientAt(base, Schema.decodeUnknownSync(SurveyPage)(page.text).respondentToken)
    const { responseId } = yield* respondent.respondent.start({
      payload: { answers: [{ questionId: "q_short_text", values: ["hi"] }], finished: true },
      headers: {}
    })
    return responseId
  })

/** How a typed call ended: "ok", or the tag of its error (`NotFound`, `Forbidden`, `Unauthorized`…). */
export const outcomeOf = <A, E extends { readonly _tag: string }, R>(call: Effect.Effect<A, E, R>) =>
  Effect.match(call, { onSuccess: () => "ok", onFailure: (error) => error._tag })
