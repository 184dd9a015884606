import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { PROCESS_TEST_TIMEOUT, request, serveProcess, sharedDatabase } from "./support/ServeProcess.js"

describe("the listen address", () => {
  it.live("serve --host 127.0.0.1 listens on that address, and HOST sets it from the environment", () =>
    Effect.gen(function*() {
      const db = yield* sharedDatabase(baseFixture)
      const flagged = yield* serveProcess(["--host", "127.0.0.1", ...db.flags])
      expect(yield* flagged.logged("Listening on")).toContain(`"Listening on http://127.0.0.1:${flagged.port}"`)
      const surveys = yield* request(`${flagged.base}/api/v1/surveys`, { headers: { authorization: `Bearer ${TOKENS.editor}` } })
      expect(surveys.status).toBe(200)

      const fromEnv = yield* serveProcess(db.flags, { HOST: "127.0.0.1" })
      expect(yield* fromEnv.logged("Listening on")).toContain(`"Listening on http://127.0.0.1:${fromEnv.port}"`)
      expect((yield* request(`${fromEnv.base}/healthz`)).status).toBe(200)

      // Without either, every interface, as before.
      const everywhere = yield* serveProcess(db.flags)
      expect(yield* everywhere.logged("Listening on")).toContain(`"Listening on http://0.0.0.0:${everywhere.port}"`)
    }).pipe(Effect.scoped), PROCESS_TEST_TIMEOUT)

  it.live("a HOST that names no address is refused at start with one line", () =>
    Effect.gen(function*() {
      const db = yield* sharedDatabase(baseFixture)
      const proc = Bun.spawn(["bun", "src/main.ts", "serve", "--host", " ", ...db.flags], {
        cwd: `${import.meta.dirname}/..`,
        stdout: "pipe",
        stderr: "pipe"
      })
      expect(yield* Effect.promise(() => proc.exited)).toBe(1)
      expect(yield* Effect.promise(() => new Response(proc.stderr).text())).toContain("Invalid data at --host: \"Expected an address or host name to listen on\"")
    }).pipe(Effect.scoped), PROCESS_TEST_TIMEOUT)
})
