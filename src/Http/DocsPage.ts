import { HttpApi, HttpApiBuilder, HttpServerResponse, OpenApi } from "@effect/platform"
import { Effect, Schema } from "effect"
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

/**
 * `GET /docs`: the OpenAPI document rendered by Scalar's API reference, the page
 * `HttpApiScalar.layer` serves, with its script inline. That layer renders the page once and
 * keeps it, beside the module's own copy of the 3.4 MB script and its source: about 20 MB of the
 * service's memory for a page that is rarely opened. Here the script stays in its file until the
 * page is asked for, and the page is built for each request and not kept.
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
    const page = Effect.promise(() => Bun.file(scalarModule).text()).pipe(
      Effect.flatMap(scriptOf),
      Effect.orDie,
      Effect.map((script) => HttpServerResponse.html(head + script + tail))
    )
    yield* router.get("/docs", page)
  })
)
