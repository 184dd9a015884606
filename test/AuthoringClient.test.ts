import { HttpServer } from "@effect/platform"
import { expect, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import openapiTS, { astToString } from "openapi-typescript"
import ts from "typescript"
import { SurveyId } from "../src/Domain/Ids.js"
import { clientFor } from "./support/ApiClient.js"
import { TOKENS } from "./support/Fixtures.js"
import { respondentFixture } from "./support/RespondentFixtures.js"
import { get, TestServer } from "./support/TestServer.js"

const docs = readFileSync(fileURLToPath(new URL("../docs/api.md", import.meta.url)), "utf8")

/** The fenced block of `language` that follows `heading` in docs/api.md. */
const blockAfter = (heading: string, language: string): string => {
  const from = docs.indexOf(heading)
  const open = docs.indexOf("```" + language + "\n", from)
  const close = docs.indexOf("\n```", open + 1)
  if (from < 0 || open < 0 || close < 0) throw new Error(`docs/api.md: no ${language} block after ${heading}`)
  return docs.slice(open + language.length + 4, close + 1)
}

const heading = "### Creating a survey from a file in CI"


/** The documented script, type-checked as an integrator's strict project would, and each diagnostic as text. */
const diagnosticsOf = (script: string) => {
  const settings = { strict: true, noEmit: true, target: "ES2022", module: "ESNext", moduleResolution: "bundler", skipLibCheck: true, types: ["bun"] }
  const program = ts.createProgram([script], ts.convertCompilerOptionsFromJson(settings, ".").options)
  return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"))
}

/** A folder inside the project, so that the script resolves `openapi-fetch` as an integrator's would. */
const scratch = Effect.acquireRelease(
  Effect.sync(() => {
    const parent = fileURLToPath(new URL("../node_modules/.cache/", import.meta.url))
    mkdirSync(parent, { recursive: true })
    return mkdtempSync(join(parent, "authoring-ci-"))
  }),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

layer(TestServer(respondentFixture))("the documented CI script", (it) => {
  it.scoped("type-checks against the generated client, creates and publishes the survey once, and reports a mistake by its path", () =>
    Effect.gen(function*() {
      const dir = yield* scratch
      const document = (yield* get("/openapi.json")).text
      writeFileSync(join(dir, "api.d.ts"), astToString(yield* Effect.promise(() => openapiTS(document))))
      const script = join(dir, "create-survey.ts")
      writeFileSync(script, blockAfter(heading, "ts"))
      writeFileSync(join(dir, "onboarding.json"), blockAfter(heading, "json"))
      const definition = Schema.decodeUnknownSync(Schema.parseJson(Schema.Struct({ title: Schema.String })))(
        blockAfter(heading, "json")
      )
      writeFileSync(join(dir, "broken.json"), JSON.stringify({ title: "Broken", questions: [{ type: "scale", label: "S", options: [{ value: "high" }] }] }))
      expect(diagnosticsOf(script)).toEqual([])

      const origin = yield* HttpServer.addressWith((address) =>
        Effect.succeed(address._tag === "TcpAddress" ? `http://127.0.0.1:${address.port}` : "")
      )
      const run = (file: string) =>
        Effect.promise(async () => {
          const child = Bun.spawn([process.execPath, script, file], {
            cwd: dir,
            env: { ...process.env, SURVEY_API: origin, SURVEY_API_KEY: TOKENS.editor, CI_PIPELINE_ID: "4711" },
            stdout: "pipe",
            stderr: "pipe"
          })
          const [stdout, stderr, code] = await Promise.all([
            new Response(child.stdout).text(),
            new Response(child.stderr).text(),
            child.exited
          ])
          return { stdout, stderr, code }
        })

      const first = yield* run("onboarding.json")
      expect(first.code, first.stderr).toBe(0)
      const id = /^(srv_\w+) is published$/m.exec(first.stdout)?.[1] ?? ""
      const api = yield* clientFor(TOKENS.editor)
      const created = { path: { id: SurveyId.make(id) } }
      const survey = yield* api.surveys.get(created)
      expect(survey).toMatchObject({ title: definition.title, status: "published" })
      const questions = yield* api.questions.list(created)
      expect(questions.data.map((q) => q.id)).toEqual(["q_role", "q_score", "q_more"])

      // A retried job (same pipeline, same file) finds the survey it created.
      const retried = yield* run("onboarding.json")
      expect(retried.code, retried.stderr).toBe(0)
      expect(retried.stdout).toContain(`${id} is published`)

      const broken = yield* run("broken.json")
      expect(broken.code).toBe(1)
      expect(broken.stderr).toContain("invalid_request")
      expect(broken.stderr).toContain("questions.0.options.0.value: a scale's values are integers")
    }), { timeout: 60_000 })
})
