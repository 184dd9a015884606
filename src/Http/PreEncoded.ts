import { HttpServerResponse } from "@effect/platform"
import type { Schema } from "effect"

/**
 * A 200 answer whose body is already in the wire form of `schema`, the endpoint's declared
 * success.
 *
 * Measured shortcut: handlers that build the wire form straight from database rows return this,
 * skipping the framework's decoding, validation and re-encoding of every item of a large, already
 * valid result. The declared schema still documents the endpoint (OpenAPI, typed clients) and
 * types the body; test/WireEncoding.test.ts checks that the two forms agree byte for byte.
 * Measurement: docs/performance.md#measured-shortcuts, "Pre-encoded bodies".
 */
export const preEncoded = <S extends Schema.Schema.Any>(
  _schema: S,
  body: Schema.Schema.Encoded<S>
): HttpServerResponse.HttpServerResponse => HttpServerResponse.unsafeJson(body)

/**
 * `preEncoded` for a body already written out as JSON text (the responses list, assembled from
 * stored renderings). The text must be what `JSON.stringify` writes for the schema's encoding;
 * test/WireEncoding.test.ts compares them byte for byte.
 */
export const preEncodedJson = <S extends Schema.Schema.Any>(
  _schema: S,
  json: string
): HttpServerResponse.HttpServerResponse =>
  // The text goes to Bun's Response as it is (Bun writes it and its Content-Length): encoding it
  // to bytes first, as `HttpServerResponse.text` does, copied every page once more.
  HttpServerResponse.raw(json, { contentType: "application/json" })

/**
 * The JSON text of a page envelope (`Page` in src/Domain/Page.ts) around the JSON text of its
 * items: what `JSON.stringify` writes for the schema's encoding of the page.
 */
export const pageJson = (items: string, nextCursor: string | null): string =>
  `{"data":[${items}],"nextCursor":${nextCursor === null ? "null" : JSON.stringify(nextCursor)}}`
