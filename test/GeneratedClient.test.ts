import { HttpServer } from "@effect/platform"
import { expect, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import openapiTS, { astToString } from "openapi-typescript"
import ts from "typescript"
import { TOKENS } from "./support/Fixtures.js"
import { respondentFixture } from "./support/RespondentFixtures.js"
import { get, TestServer } from "./support/TestServer.js"

/**
 * What an integrator writes against a client generated from `/openapi.json` with
 * openapi-typescript and openapi-fetch: natural error handling on `error.code` and
 * `issues[0].path`, the JSON page typed as the page, the CSV export as text. The lines marked
 * `@ts-expect-error` must not compile; if one did, the directive itself would be reported.
 */
const program = `
import createClient from "openapi-fetch"
import type { paths } from "./api"

const report = (error: { code: string; message: string }): string => error.code + ": " + error.message

export const integrator = (baseUrl: string, apiKey: string) => {
  const client = createClient<paths>({ baseUrl, headers: { authorization: "Bearer " + apiKey } })

  /** Every response id of a survey, walking the pages; an error names its code and the field at fault. */
  const responseIds = async (surveyId: string, limit: number): Promise<Array<string>> => {
    const ids: Array<string> = []
    let cursor: string | undefined
    for (let page = 0; page < 1000; page++) {
      const { data, error } = await client.GET("/api/v1/surveys/{id}/responses", {
        params: { path: { id: surveyId }, query: cursor === undefined ? { limit } : { limit, cursor } }
      })
      if (error) {
        const code: string = error.code
        if (error.code === "invalid_request") {
          const where: string = error.issues[0].path
          throw new Error(code + " at " + where)
        }
        throw new Error(report(error))
      }
      for (const response of data.data) ids.push(response.id)
      if (data.nextCursor === null) break
      cursor = data.nextCursor
    }
    return ids
  }

  const exportCsv = async (surveyId: string): Promise<string> => {
    const { data, error } = await client.GET("/api/v1/surveys/{id}/responses.csv", {
      params: { path: { id: surveyId }, query: { status: "all" } },
      parseAs: "text"
    })
    if (error) throw new Error(report(error))
    return data
  }

  const embedUrl = async (surveyId: string, externalUserId: string): Promise<string> => {
    const { data, error } = await client.POST("/api/v1/surveys/{id}/embed-sessions", {
      params: { path: { id: surveyId } },
      body: { externalUserId }
    })
    if (error) {
      const firstIssue: string = error.code === "invalid_request" && error.issues.length > 0 ? error.issues[0].path : "-"
      return "refused " + error.code + " " + firstIssue
    }
    return data.embedUrl
  }

  const mistakes = async () => {
    const { data, error } = await client.GET("/api/v1/surveys/{id}/responses", { params: { path: { id: "srv" } } })
    if (error) {
      // @ts-expect-error issues belong to invalid_request only
      return error.issues
    }
    // @ts-expect-error the JSON request answers a page, not text
    const text: string = data
    // @ts-expect-error limit is a number
    await client.GET("/api/v1/surveys", { params: { query: { limit: "ten" } } })
    return text
  }

  return { responseIds, exportCsv, embedUrl, mistakes }
}

`

/** Runs the program as an integrator would, against the server named on its command line. */
const runner = `
import { integrator } from "./integrator"

const [baseUrl = "", apiKey = ""] = process.argv.slice(2)
const api = integrator(baseUrl, apiKey)
const outcome = (run: () => Promise<unknown>) => run().then((value) => ({ value }), (e: Error) => ({ error: e.message }))
console.log(JSON.stringify({
  all: await outcome(() => api.responseIds("srv_main", 1)),
  badLimit: await outcome(() => api.responseIds("srv_main", 0)),
  missing: await outcome(() => api.responseIds("srv_nope", 10)),
  csv: await outcome(() => api.exportCsv("srv_main")),
  draft: await outcome(() => api.embedUrl("srv_draft", "user-1")),
  tooLong: await outcome(() => api.embedUrl("srv_all", "x".repeat(300)))
}))
`

const Outcome = <A, I>(value: Schema.Schema<A, I>) =>
  Schema.Union(Schema.Struct({ error: Schema.String }), Schema.Struct({ value }))
const Printed = Schema.parseJson(Schema.Struct({
  all: Outcome(Schema.Array(Schema.String)),
  badLimit: Outcome(Schema.Unknown),
  missing: Outcome(Schema.Unknown),
  csv: Outcome(Schema.String),
  draft: Outcome(Schema.String),
  tooLong: Outcome(Schema.String)
}))
const Page = Schema.Struct({ data: Schema.Array(Schema.Struct({ id: Schema.String })) })

const cacheDir = fileURLToPath(new URL("../node_modules/.cache/", import.meta.url))

/** A directory inside the project, so that the program resolves `openapi-fetch` as an integrator's would. */
const workDir = Effect.acquireRelease(
  Effect.sync(() => {
    mkdirSync(cacheDir, { recursive: true })
    return mkdtempSync(join(cacheDir, "generated-client-"))
  }),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

const typeErrors = (file: string): ReadonlyArray<string> => {
  const checked = ts.createProgram([file], {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    skipLibCheck: true,
    lib: ["lib.es2022.d.ts", "lib.dom.d.ts"],
    types: []
  })
  return ts.getPreEmitDiagnostics(checked).map((d) =>
    `${d.file?.fileName ?? ""}:${d.start ?? ""} ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`
  )
}

const serverOrigin = HttpServer.addressWith((address) =>
  Effect.succeed(address._tag === "TcpAddress" ? `http://127.0.0.1:${address.port}` : "")
)

layer(TestServer(respondentFixture))("a client generated from the served document", (it) => {
  it.scoped("type-checks natural error handling and runs against the service", () =>
    Effect.gen(function*() {
      const served = yield* get("/openapi.json")
      expect(served.status).toBe(200)
      const dir = yield* workDir
      const types = yield* Effect.promise(() => openapiTS(served.text))
      writeFileSync(join(dir, "api.d.ts"), astToString(types))
      const file = join(dir, "integrator.ts")
      writeFileSync(file, program)
      const run = join(dir, "run.ts")
      writeFileSync(run, runner)

      expect(typeErrors(file)).toEqual([])

      // The same program, run by Bun as an integrator would, against this server.
      const origin = yield* serverOrigin
      const child = Bun.spawn([process.execPath, run, origin, TOKENS.editor], { stdout: "pipe", stderr: "pipe" })
      const [stdout, stderr, exitCode] = yield* Effect.promise(() =>
        Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
      )
      expect(exitCode, stderr).toBe(0)
      const printed = Schema.decodeUnknownSync(Printed)(stdout)
      const direct = Schema.decodeUnknownSync(Page)(
        (yield* get("/api/v1/surveys/srv_main/responses?limit=100", TOKENS.editor)).body
      )
      expect(printed.all).toEqual({ value: direct.data.map((r) => r.id) })
      expect(printed.badLimit).toEqual({ error: "invalid_request at limit" })
      expect(printed.missing).toMatchObject({ error: expect.stringMatching(/^not_found: /) })
      expect(printed.csv).toMatchObject({ value: expect.stringMatching(/^responseId,surveyId,externalUserId,/) })
      expect(printed.draft).toEqual({ value: "refused invalid_request id" })
      expect(printed.tooLong).toEqual({ value: "refused invalid_request externalUserId" })
    }), { timeout: 60_000 })
})
