import { HttpApi, HttpApiBuilder, HttpServerRequest, HttpServerResponse, OpenApi } from "@effect/platform"
import { Effect, Schema, Stream } from "effect"
import { gzip } from "node:zlib"
import { promisify } from "node:util"
// The file of `@effect/platform` that holds Scalar's API reference script (as one string literal),
// embedded in the compiled binary as a file (tsconfig `paths`, src/Http/scalar-module.d.ts).
import scalarModule from "#scalar-module" with { type: "file" }

const ScriptLiteral = Schema.parseJson(Schema.String)
const declaration = "export const javascript="

/**
 * The script out of its module's text: a first line `… export const javascript="…";` (a JSON
 * string holds no line break), then a source map comment.
 */
const scriptOf = (moduleText: string) => {
  const line = moduleText.slice(0, moduleText.indexOf("\n"))
  const literal = line.slice(line.indexOf(declaration) + declaration.length).replace(/;$/, "")
  return Schema.decodeUnknown(ScriptLiteral)(literal)
}

// As @effect/platform's HttpApiScalar renders the page (src/internal/html.ts).
const escapeJson = (value: unknown) =>
  JSON.stringify(value).replace(/<\/script>/gi, "<\\/script>").replace(/[\u2028\u2029]/g, (c) => c === "\u2028" ? "\\u2028" : "\\u2029")
const escapeHtml = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")

const gzipped = promisify(gzip)

/** Whether an `Accept-Encoding` header takes gzip (named or `*`, with a weight above 0). */
export const acceptsGzip = (header: string | undefined): boolean =>
  (header ?? "").split(",").some((part) => {
    const [name = "", ...params] = part.split(";").map((p) => p.trim().toLowerCase())
    const weight = params.find((p) => p.startsWith("q="))
    return (name === "gzip" || name === "*") && (weight === undefined || Number(weight.slice(2)) > 0)
  })

/** What the service keeps of the docs page: the gzipped page's size (0 until it is first asked for) and how often it was built. */
export const docsPageHeld = { gzippedBytes: 0, builds: 0 }

/**
 * `GET /docs`: the OpenAPI document rendered by Scalar's API reference, the page
 * `HttpApiScalar.layer` serves, with its script inline.
 *
 * Measured shortcut: that layer renders the page once and keeps it, beside the module's own copy
 * of the large script and its source, for a page that is rarely opened. Here the script stays in
 * its file until the page is first asked for; the page is then built once and kept gzipped only,
 * sent as it is to clients that take gzip and unpacked as it streams for the others, so an
 * unauthenticated request costs neither a rebuild nor a second full copy (test/DocsPage.test.ts).
 * Measurement: docs/performance.md#measured-shortcuts, "The `/docs` page kept gzipped".
 */
export const DocsPageLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const { api } = yield* HttpApi.Api
    const spec = OpenApi.fromApi(api)
    const description = spec.info.description
    const head = `<!doctype html>
<html>
  <head>
    <meta charset="utf-8" />
    <title>${escapeHtml(spec.info.title)}</title>
    ${!description ? "" : `<meta name="description" content="${escapeHtml(description)}"/>`}
    ${!description ? "" : `<meta name="og:description" content="${escapeHtml(description)}"/>`}
    <meta
      name="viewport"
      content="width=device-width, initial-scale=1" />
  </head>
  <body>
    <script id="api-reference" type="application/json">
      ${escapeJson(spec)}
    </script>
    <script>
      document.getElementById('api-reference').dataset.configuration = JSON.stringify(${escapeJson({ _integration: "html" })})
    </script>
    <script>`
    const tail = `</script>
  </body>
</html>`
    const page = yield* Effect.cached(
      Effect.promise(() => Bun.file(scalarModule).text()).pipe(
        Effect.flatMap(scriptOf),
        Effect.orDie,
        // Off the event loop: gzipping the whole page is far too long for one turn of it.
        Effect.flatMap((script) => Effect.promise(() => gzipped(head + script + tail))),
        Effect.tap((packed) => {
          docsPageHeld.gzippedBytes = packed.byteLength
          docsPageHeld.builds++
        })
      )
    )
    const answer = Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const packed = yield* page
      const headers = { vary: "accept-encoding" }
      if (acceptsGzip(request.headers["accept-encoding"])) {
        return HttpServerResponse.uint8Array(packed, {
          contentType: "text/html",
          headers: { ...headers, "content-encoding": "gzip" }
        })
      }
      const unpacked = new Blob([packed]).stream().pipeThrough(new DecompressionStream("gzip"))
      return HttpServerResponse.stream(Stream.fromReadableStream(() => unpacked, Effect.die), {
        contentType: "text/html",
        headers
      })
    })
    yield* router.get("/docs", answer)
  })
)
