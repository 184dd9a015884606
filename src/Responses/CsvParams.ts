import { HttpApiBuilder, HttpServerRequest } from "@effect/platform"
import { Effect } from "effect"

const responsesList = /^\/api\/v1\/surveys\/[^/?]+\/responses$/

/**
 * The CSV export ignores `cursor` and `limit` (api-v1 §8): they are taken off a
 * `format=csv` request for the responses list before its parameters are decoded, so that a value
 * the paged list would refuse (a `limit` of 1000, a stale cursor) does not fail the download.
 */
export const CsvIgnoresPagingLive = HttpApiBuilder.middleware((app) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const query = request.url.indexOf("?")
    if (query === -1 || !request.url.includes("csv", query)) return app
    const path = request.url.slice(0, query)
    if (!responsesList.test(path)) return app
    const params = new URLSearchParams(request.url.slice(query + 1))
    if (params.get("format") !== "csv" || (!params.has("limit") && !params.has("cursor"))) return app
    params.delete("limit")
    params.delete("cursor")
    const rest = params.toString()
    return Effect.provideService(
      app,
      HttpServerRequest.HttpServerRequest,
      request.modify({ url: rest === "" ? path : `${path}?${rest}` })
    )
  })
)
