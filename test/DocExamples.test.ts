import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { PROCESS_TEST_TIMEOUT, processEnv, serveProcess, within } from "./support/ServeProcess.js"
import { postgresDatabase, testDatabase } from "./support/TestServer.js"

const root = join(import.meta.dirname, "..")

/** Every shell example of a document, in order, with the heading it stands under. */
const shellExamples = (file: string) => {
  const text = readFileSync(join(root, file), "utf8")
  const examples: Array<{ readonly file: string; readonly heading: string; readonly script: string }> = []
  let heading = ""
  const lines = text.split("\n")
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? ""
    if (line.startsWith("#")) heading = line
    if (line !== "```sh") continue
    const body: Array<string> = []
    while (i + 1 < lines.length && lines[i + 1] !== "```") body.push(lines[++i] ?? "")
    examples.push({ file, heading: `${file} ${heading}`, script: body.join("\n") })
  }
  return examples
}

/**
 * The examples that do not run against a served demo, and what runs them instead: installing
 * Bun and the suite itself, the compiled binary's commands (CI's smoke test of the binary), and
 * the simulated-clock CI script, which runs as written in test/TestClockExample.test.ts.
 */
const elsewhere = (script: string) =>
  script.startsWith("npm install -g bun") ||
  script === "bun run test" ||
  script.startsWith("dist/survey-service ") ||
  script.startsWith("#!/usr/bin/env bash")

/** Placeholders the examples name for ids the reader fills in: a 404 there is the example working. */
const placeholders = ["evt_0123456789abcdefABCD", "/responses/rsp_..."]

describe("the examples of README.md and docs/api.md", () => {
  it.live("run against a served demo: no example answers a 5xx, a refused key or a missing route", () =>
    Effect.gen(function*() {
      const absent = ["curl", "jq"].filter((tool) => Bun.which(tool) === null)
      expect(absent, `the examples need ${absent.join(", ")}`).toEqual([])
      const work = mkdtempSync(join(tmpdir(), "doc-examples-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(work, { recursive: true, force: true })))
      const url = testDatabase === "postgres" ? yield* postgresDatabase(undefined, { migrated: false }) : undefined
      const database = url === undefined ? { DATABASE_PATH: join(work, "survey.db") } : { DATABASE_URL: url }
      // A receiver for the examples' webhooks, in place of hooks.example.com.
      const received: Array<string> = []
      const hooks = yield* Effect.acquireRelease(
        Effect.sync(() =>
          Bun.serve({
            hostname: "127.0.0.1",
            port: 0,
            fetch: async (request) => {
              received.push(await request.text())
              return new Response(null, { status: 204 })
            }
          })
        ),
        (server) => Effect.promise(() => server.stop(true))
      )
      const server = yield* serveProcess(["--demo"], database)
      const keyLine = yield* server.logged("editor key:")
      const key = /sk_live_[A-Za-z0-9]+/.exec(keyLine)?.[0]
      if (key === undefined) return yield* Effect.dieMessage(`no editor key in ${keyLine}`)

      // curl as the examples call it, logging each answer's status and URL for the checks below.
      const statuses = join(work, "statuses")
      const bin = join(work, "bin")
      const realCurl = Bun.which("curl") ?? "curl"
      yield* Effect.sync(() => {
        Bun.spawnSync(["mkdir", "-p", bin])
        writeFileSync(
          join(bin, "curl"),
          `#!/usr/bin/env bash\nexec ${realCurl} -w '%{stderr}%{http_code} %{url_effective}\\n' "$@" 2>>"${statuses}"\n`
        )
        chmodSync(join(bin, "curl"), 0o755)
      })
      const hookBase = `http://127.0.0.1:${hooks.port}`
      const prepare = (script: string) =>
        script
          .replaceAll("http://localhost:8080", server.base)
          .replaceAll("https://hooks.example.com", hookBase)
          .replace(/^KEY=sk_live_\.\.\..*$/m, `KEY=${key}`)
          .replace(
            /^TOKEN=\.\.\..*$/m,
            `TOKEN=$(${realCurl} -s -H 'Accept: application/json' ${server.base}/s/srv_demo_feedback | jq -r .respondentToken)`
          )
          .replaceAll("bun run src/main.ts", `bun ${join(root, "src", "main.ts")}`)

      const examples = [...shellExamples("README.md"), ...shellExamples("docs/api.md")]
      const ran: Array<string> = []
      for (const { file, heading, script } of examples) {
        if (elsewhere(script)) continue
        // Each document's examples run in a directory of their own, as a reader following one would.
        const cwd = join(work, file.replace(/\W/g, "_"))
        Bun.spawnSync(["mkdir", "-p", cwd])
        writeFileSync(statuses, "")
        const run = yield* within(
          `the example under ${heading} to finish`,
          Effect.promise(async () => {
            const proc = Bun.spawn(["bash", "-c", `set -eo pipefail\n${prepare(script)}`], {
              cwd,
              env: { ...processEnv, ...database, PATH: `${bin}:${process.env.PATH ?? ""}`, KEY: key },
              stdin: "ignore",
              stdout: "pipe",
              stderr: "pipe"
            })
            const [code, stdout, stderr] = await Promise.all([
              proc.exited,
              new Response(proc.stdout).text(),
              new Response(proc.stderr).text()
            ])
            return { code, stdout, stderr }
          })
        )
        const label = `${heading}\n${script}\n--- stdout\n${run.stdout.slice(0, 2000)}\n--- stderr\n${run.stderr.slice(0, 2000)}`
        expect(run.code, label).toBe(0)
        const answers = readFileSync(statuses, "utf8").split("\n").filter((line) => /^\d{3} /.test(line))
        const broken = answers.filter((line) => {
          const [status = "", url = ""] = line.split(" ")
          if (status === "000" || status.startsWith("5")) return true
          if (status === "401" || status === "403") return !url.includes("/usage")
          return status === "404" && !placeholders.some((p) => url.includes(p))
        })
        expect(broken, label).toEqual([])
        ran.push(heading)
      }
      // Every document's examples ran: README's tour and docs/api.md's sections.
      expect(ran.filter((h) => h.startsWith("README.md")).length).toBeGreaterThanOrEqual(1)
      expect(ran.filter((h) => h.startsWith("docs/api.md")).length).toBeGreaterThanOrEqual(12)
      // The editing recipe ran as written and ended on its check.
      expect(ran.some((h) => h.includes("Editing a live survey safely"))).toBe(true)
      // The webhook examples reached the receiver.
      expect(received.length).toBeGreaterThan(0)
    }).pipe(Effect.scoped), PROCESS_TEST_TIMEOUT)
})
