import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { join } from "node:path"
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
