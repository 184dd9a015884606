import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import openapiTS, { astToString } from "openapi-typescript"
import ts from "typescript"
import { freePort, polled, PROCESS_TEST_TIMEOUT, processEnv, request, serveProcess, within } from "./support/ServeProcess.js"
import { fencedBlocks } from "./support/DocBlocks.js"
import { postgresDatabase, testDatabase } from "./support/TestServer.js"

const root = join(import.meta.dirname, "..")

/** Every TypeScript example, its heading (`docs/api.md ### Verifying a delivery`) as `under`. */
const examples = [...fencedBlocks("README.md", "ts"), ...fencedBlocks("docs/api.md", "ts")].map((block) => ({
  under: block.heading,
  code: `${block.text}\n`
}))

const typedClient = "docs/api.md ## The OpenAPI document and typed clients"
const receiver = "docs/api.md ### Verifying a delivery"

/**
 * The examples that need a fixture of their own, and the test that runs each as written (it
 * reads the block under that heading): the CI script creates and publishes a survey from a file
 * and reports a mistake by path; the verifier checks deliveries across a rotation.
 */
const runElsewhere: Readonly<Record<string, string>> = {
  "docs/api.md ### Creating a survey from a file in CI": "test/AuthoringClient.test.ts",
  "docs/api.md ### Rotating a webhook's secret": "test/SecretRotation.test.ts"
}

/** An example type-checked as an integrator's strict project would (Bun's types, the generated `./api`). */
const typeErrors = (file: string): ReadonlyArray<string> => {
  const settings = { strict: true, noEmit: true, target: "ES2022", module: "ESNext", moduleResolution: "bundler", skipLibCheck: true, types: ["bun"] }
  const program = ts.createProgram([file], ts.convertCompilerOptionsFromJson(settings, ".").options)
  return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"))
}

/** A running program's output as it comes, and its exit. */
const started = (file: string, cwd: string, env: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const proc = Bun.spawn([process.execPath, file], { cwd, env: { ...processEnv, ...env }, stdout: "pipe", stderr: "pipe" })
      const output = { stdout: "", stderr: "" }
      const collect = async (stream: ReadableStream<Uint8Array>, into: "stdout" | "stderr") => {
        const decoder = new TextDecoder()
        const reader = stream.getReader()
        for (let read = await reader.read(); !read.done; read = await reader.read()) {
          output[into] += decoder.decode(read.value, { stream: true })
        }
      }
      const done = Promise.all([collect(proc.stdout, "stdout"), collect(proc.stderr, "stderr")]).then(() => proc.exited)
      return { proc, output, done }
    }),
    ({ done, proc }) =>
      Effect.promise(async () => {
        if (proc.exitCode === null && proc.signalCode === null) proc.kill(9)
        await done
      })
  )

const Ids = Schema.parseJson(Schema.Struct({ data: Schema.Array(Schema.Struct({ id: Schema.String })) }))
const Registered = Schema.parseJson(Schema.Struct({ signingSecret: Schema.String }))
const Tested = Schema.parseJson(Schema.Struct({ delivered: Schema.Boolean }))

describe("the TypeScript examples of README.md and docs/api.md", () => {
  it("each runs as a test: here, or in the test named for it", () => {
    const here = [typedClient, receiver]
    expect(examples.map((e) => e.under).filter((under) => !here.includes(under) && runElsewhere[under] === undefined)).toEqual([])
    for (const under of here) expect(examples.filter((e) => e.under === under)).toHaveLength(1)
    for (const [under, file] of Object.entries(runElsewhere)) {
      expect(examples.some((e) => e.under === under), under).toBe(true)
      expect(readFileSync(join(root, file), "utf8"), file).toContain(under.slice(under.indexOf(" ") + 1))
    }
  })

  it.live("type-check and run as written against a served demo: the typed client lists the responses, the receiver verifies a delivery", () =>
    Effect.gen(function*() {
      // A folder inside the project, so that the examples resolve openapi-fetch and standardwebhooks as an integrator's would.
      const cache = join(root, "node_modules", ".cache")
      mkdirSync(cache, { recursive: true })
      const dir = yield* Effect.acquireRelease(
        Effect.sync(() => mkdtempSync(join(cache, "doc-ts-examples-"))),
        (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
      )
      const url = testDatabase === "postgres" ? yield* postgresDatabase(undefined, { migrated: false }) : undefined
      const server = yield* serveProcess(["--demo"], url === undefined ? { DATABASE_PATH: join(dir, "survey.db") } : { DATABASE_URL: url })
      const key = /sk_live_[A-Za-z0-9]+/.exec(yield* server.logged("editor key:"))?.[0]
      if (key === undefined) return yield* Effect.dieMessage("the demo printed no editor key")
      const api = (method: string, path: string, body?: unknown) =>
        request(`${server.base}${path}`, {
          method,
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          ...(body === undefined ? {} : { body: JSON.stringify(body) })
        })

      // The generated types the examples import, as their comment says to make them.
      const document = yield* request(`${server.base}/openapi.json`)
      writeFileSync(join(dir, "api.d.ts"), astToString(yield* Effect.promise(() => openapiTS(document.text))))
      const fileOf = (under: string, name: string) => {
        const file = join(dir, name)
        writeFileSync(file, examples.find((e) => e.under === under)?.code ?? "")
        expect(typeErrors(file), under).toEqual([])
        return file
      }

      // The typed client prints the id of every response of the first page, as the API lists them.
      const client = yield* started(fileOf(typedClient, "responses.ts"), dir, { SURVEY_API: server.base, SURVEY_API_KEY: key })
      const code = yield* within("the typed client example to finish", Effect.promise(() => client.done))
      expect(code, client.output.stderr).toBe(0)
      const listed = yield* api("GET", "/api/v1/surveys/srv_demo_feedback/responses?limit=100")
      const ids = Schema.decodeUnknownSync(Ids)(listed.text).data.map((r) => r.id)
      expect(ids.length).toBeGreaterThan(0)
      expect(client.output.stdout.trim().split("\n")).toEqual(ids)

      // The receiver, given the secret of a webhook that targets it, answers a test event 2xx and
      // logs it once; a delivery it cannot verify gets 400 and is not logged.
      const port = freePort()
      const registered = yield* api("PUT", "/api/v1/webhooks", { targetUrl: `http://127.0.0.1:${port}/` })
      expect(registered.status, registered.text).toBe(200)
      const secret = Schema.decodeUnknownSync(Registered)(registered.text).signingSecret
      const hook = yield* started(fileOf(receiver, "receiver.ts"), dir, { PORT: String(port), SURVEY_WEBHOOK_SECRET: secret })
      yield* polled("the receiver to listen", Effect.sync(() => hook.output.stdout), (out) => out.includes("listening on "))
      const sent = yield* api("POST", "/api/v1/webhooks/test")
      expect(Schema.decodeUnknownSync(Tested)(sent.text)).toEqual({ delivered: true })
      const logged = yield* polled("the receiver to log the test event", Effect.sync(() => hook.output.stdout), (out) => /^received /m.test(out))
      const received = /^received (evt_\w+): (.*)$/m.exec(logged)
      expect(received?.[2], hook.output.stdout).toContain("\"type\":\"webhook.test\"")
      const forged = yield* request(`http://127.0.0.1:${port}/`, {
        method: "POST",
        headers: {
          "webhook-id": "evt_forged",
          "webhook-timestamp": String(Math.floor(Date.now() / 1000)),
          "webhook-signature": `v1,${Buffer.alloc(32).toString("base64")}`
        },
        body: "{}"
      })
      expect(forged.status).toBe(400)
      expect(hook.output.stdout.match(/^received /gm)).toHaveLength(1)
    }).pipe(Effect.scoped), PROCESS_TEST_TIMEOUT)
})
