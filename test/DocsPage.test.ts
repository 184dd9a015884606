import { HttpServer } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { get as httpGet, type IncomingHttpHeaders } from "node:http"
import { join } from "node:path"
import { gunzipSync } from "node:zlib"
import { acceptsGzip, docsPageHeld } from "../src/Http/DocsPage.js"
import { get, TestServer } from "./support/TestServer.js"

const PlatformScript = Schema.Struct({ javascript: Schema.String })
const specScript = /<script id="api-reference" type="application\/json">\s*([\s\S]*?)\s*<\/script>/

describe("GET /docs", () => {
  it.effect("renders the served OpenAPI document with the Scalar script @effect/platform ships, inline", () =>
    Effect.gen(function*() {
      const page = yield* get("/docs")
      expect(page.status).toBe(200)
      expect(page.headers["content-type"]).toBe("text/html")
      const spec = specScript.exec(page.text)?.[1]
      expect(spec).toBeDefined()
      expect(JSON.parse(spec ?? "")).toEqual((yield* get("/openapi.json")).body)
      // The script as the platform's module holds it, evaluated by the runtime rather than parsed from its text.
      const modulePath = join(import.meta.dirname, "..", "node_modules/@effect/platform/dist/esm/internal/httpApiScalar.js")
      const { javascript } = Schema.decodeUnknownSync(PlatformScript)(yield* Effect.promise(() => import(modulePath)))
      expect(javascript.length).toBeGreaterThan(1_000_000)
      expect(page.text.endsWith(`<script>${javascript}</script>\n  </body>\n</html>`)).toBe(true)
    }).pipe(Effect.provide(TestServer())))
})

/** A GET straight over HTTP/1.1 with the given headers: the body as the server sent it, not decoded. */
const rawGet = (port: number, path: string, headers: Record<string, string>) =>
  Effect.async<{ readonly headers: IncomingHttpHeaders; readonly body: Buffer }>((resume) => {
    const request = httpGet({ host: "127.0.0.1", port, path, headers }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("end", () => resume(Effect.succeed({ headers: response.headers, body: Buffer.concat(chunks) })))
    })
    request.on("error", (error) => resume(Effect.die(error)))
  })

const portOf = Effect.map(HttpServer.HttpServer, (server) => server.address._tag === "TcpAddress" ? server.address.port : 0)

describe("GET /docs kept gzipped", () => {
  it.effect("built once; gzip to clients that take it, the same bytes unpacked to those that do not; only the gzipped page is kept", () =>
    Effect.gen(function*() {
      const port = yield* portOf
      const buildsBefore = docsPageHeld.builds
      const plain = yield* rawGet(port, "/docs", { "accept-encoding": "identity" })
      const packed = yield* rawGet(port, "/docs", { "accept-encoding": "br;q=1, gzip;q=0.5" })
      const none = yield* rawGet(port, "/docs", {})
      const refused = yield* rawGet(port, "/docs", { "accept-encoding": "gzip;q=0" })
      const page = (yield* get("/docs")).text

      expect(plain.headers["content-encoding"]).toBeUndefined()
      expect(plain.body.toString("utf8")).toBe(page)
      expect(none.body.equals(plain.body)).toBe(true)
      expect(refused.headers["content-encoding"]).toBeUndefined()
      expect(refused.body.equals(plain.body)).toBe(true)
      expect(packed.headers["content-encoding"]).toBe("gzip")
      expect(packed.headers["content-type"]).toBe("text/html")
      expect(packed.headers["vary"]).toBe("accept-encoding")
      expect(gunzipSync(packed.body).equals(plain.body)).toBe(true)

      expect(docsPageHeld.builds).toBe(buildsBefore + 1)
      expect(docsPageHeld.gzippedBytes).toBe(packed.body.byteLength)
      expect(docsPageHeld.gzippedBytes * 3).toBeLessThan(plain.body.byteLength)
    }).pipe(Effect.provide(TestServer())))

  it("reads Accept-Encoding's names and weights", () => {
    expect(acceptsGzip("gzip")).toBe(true)
    expect(acceptsGzip("deflate, GZIP;q=0.1")).toBe(true)
    expect(acceptsGzip("*")).toBe(true)
    expect(acceptsGzip(undefined)).toBe(false)
    expect(acceptsGzip("identity")).toBe(false)
    expect(acceptsGzip("gzip;q=0")).toBe(false)
    expect(acceptsGzip("x-gzip-not")).toBe(false)
  })
})
