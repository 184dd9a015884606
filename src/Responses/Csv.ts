import { HttpServerResponse } from "@effect/platform"
import { edenGC } from "bun:jsc"
import { Chunk, Effect, Option, Stream } from "effect"
import type { CsvExport, CsvExportRepo, ExportPosition } from "./CsvExportRepo.js"
import { attachmentDisposition, csvLine, headerOf } from "./CsvText.js"

/**
 * The CSV export of decisions §6: RFC 4180 (comma, CRLF, quotes doubled), UTF-8 without BOM,
 * fixed columns then one per current question, streamed page by page from a keyset walk so
 * memory stays flat whatever the survey's size.
 */

/**
 * CSV text after which the export collects its garbage: a young-generation collection, and a
 * full one every eighth time.
 *
 * Measured shortcut: the export collects its own garbage, skipping JavaScriptCore's heuristics,
 * which size the heap to the machine's memory and let an export's written pages pile up. A
 * collection changes no byte of the export (test/Csv.test.ts). Measurement:
 * docs/performance.md#measured-shortcuts, "Collections during the CSV export".
 */
const collectAfterBytes = 1024 * 1024
const fullCollectionEvery = 8

/**
 * What a failed page ends the download with: the server then closes the connection before the
 * body's last chunk, so the client sees the download cut short. Bun prints the error that ends a
 * response's stream, stack included; this one has none, since the warning logged with it says why.
 */
const cutShort = () => {
  const error = new Error("CSV export cut short: a page failed")
  error.stack = error.message
  return error
}

/** The export as a byte stream, one chunk per keyset page. */
export const csvStream = (exports: CsvExportRepo, req: CsvExport): Stream.Stream<Uint8Array> => {
  const encoder = new TextEncoder()
  const read = exports.pagesOf(req)
  const page = (after: Option.Option<ExportPosition>) =>
    read(after).pipe(Effect.catchAll((error) =>
      Effect.zipRight(
        Effect.logWarning("CSV export cut short: a page failed", {
          surveyId: req.surveyId,
          reason: error.cause instanceof Error ? error.cause.message : error.message
        }),
        Effect.die(cutShort())
      )
    ))

  let sinceCollection = 0
  let collections = 0
  const pages = Stream.paginateChunkEffect(Option.none<ExportPosition>(), (after) =>
    Effect.map(page(after), ({ lines, next }): readonly [Chunk.Chunk<Uint8Array>, Option.Option<Option.Option<ExportPosition>>] => {
      sinceCollection += lines.length
      if (sinceCollection >= collectAfterBytes) {
        sinceCollection = 0
        collections++
        if (collections % fullCollectionEvery === 0) Bun.gc(true)
        else edenGC()
      }
      return [lines.length === 0 ? Chunk.empty() : Chunk.of(encoder.encode(lines)), Option.map(next, Option.some)]
    }))

  return Stream.concat(Stream.succeed(encoder.encode(csvLine(headerOf(req.questions)))), pages)
}

/** The download: `text/csv` with an attachment name of `<surveyId>-responses.csv`. */
export const csvResponse = (exports: CsvExportRepo, req: CsvExport) =>
  HttpServerResponse.stream(csvStream(exports, req), {
    contentType: "text/csv; charset=utf-8",
    headers: { "content-disposition": attachmentDisposition(`${req.surveyId}-responses.csv`) }
  })
