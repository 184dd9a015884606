import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { consoleBundle } from "./generated/Bundle.js"

/**
 * The console's Content-Security-Policy: its own script and style only, no inline code, no other
 * origin, calls to this origin's API, the survey page framed for a preview, never framed itself.
 */
export const consoleCsp = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-src 'self'",
  "form-action 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'"
].join("; ")

const page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<title>Survey Service console</title>
<link rel="stylesheet" href="/console/console.css?v=${consoleBundle.hash}">
</head>
<body>
<div id="app"><p class="boot">Loading the console…</p><noscript>The console needs JavaScript.</noscript></div>
<script type="module" src="/console/console.js?v=${consoleBundle.hash}"></script>
</body>
</html>
`

const common = {
  "content-security-policy": consoleCsp,
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY"
}

const asset = (body: string, contentType: string) =>
  HttpServerResponse.text(body, { contentType, headers: { ...common, "cache-control": "no-cache", etag: `"${consoleBundle.hash}"` } })

/**
 * `/console`: the workspace console, a page and its script and style built from src/Console/ui
 * (scripts/build-console.ts) and carried as strings, so the compiled binary serves them. It works
 * through the public `/api/v1` only, with the key its user pastes.
 */
export const ConsoleRoutes = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const html = () => HttpServerResponse.html(page).pipe(HttpServerResponse.setHeaders({ ...common, "cache-control": "no-store" }))
    yield* router.get("/console", Effect.sync(html))
    yield* router.get("/console/console.js", Effect.sync(() => asset(consoleBundle.js, "text/javascript; charset=utf-8")))
    yield* router.get("/console/console.css", Effect.sync(() => asset(consoleBundle.css, "text/css; charset=utf-8")))
  })
)
