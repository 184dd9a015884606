import { HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { Api } from "../../src/Api.js"

/**
 * The typed client of the service's HttpApi (`src/Api.ts`), pointed at the test server, sending
 * `token` as its bearer credential: an API key, or a respondent token for the respondent API.
 * Without a token it sends no Authorization header.
 */
export const clientFor = (token?: string) =>
  HttpApiClient.make(
    Api,
    token === undefined ? {} : { transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(token)) }
  )
