import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Schema } from "effect"
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Webhook } from "standardwebhooks"
import { polled, PROCESS_TEST_TIMEOUT, processEnv, request, serveProcess, within } from "./support/ServeProcess.js"
import { fencedBlocks } from "./support/DocBlocks.js"
import { postgresDatabase, testDatabase } from "./support/TestServer.js"

const root = join(import.meta.dirname, "..")

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

/** The heading of the outage recipe, which runs exactly as written, after a real outage. */
const outageHeading = "### When your endpoint was down"

const Settings = Schema.parseJson(Schema.Struct({
  enabled: Schema.Boolean,
  disabledReason: Schema.NullOr(Schema.String),
  events: Schema.Array(Schema.String),
  maxAttemptsPerSecond: Schema.optional(Schema.NullOr(Schema.Number))
}))
const Registered = Schema.parseJson(Schema.Struct({ signingSecret: Schema.String }))
const Page = Schema.parseJson(Schema.Struct({ respondentToken: Schema.String }))
const Delivery = Schema.parseJson(Schema.Struct({ id: Schema.String }))

describe("the examples of README.md and docs/api.md", () => {
  it.live("run against a served demo: no example answers an error, but for the 429 the quota example asks for", () =>
    Effect.gen(function*() {
      const absent = ["curl", "jq"].filter((tool) => Bun.which(tool) === null)
      expect(absent, `the examples need ${absent.join(", ")}`).toEqual([])
      const work = mkdtempSync(join(tmpdir(), "doc-examples-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(work, { recursive: true, force: true })))
      const url = testDatabase === "postgres" ? yield* postgresDatabase(undefined, { migrated: false }) : undefined
      const database = url === undefined ? { DATABASE_PATH: join(work, "survey.db") } : { DATABASE_URL: url }
      // A receiver for the examples' webhooks, in place of hooks.example.com: each event id it was
      // sent, with the status it answered (410 while the outage recipe's outage lasts).
      const received: Array<{
        readonly eventId: string
        readonly status: number
        readonly path: string
        readonly body: string
        readonly headers: Record<string, string>
      }> = []
      let answer = 204
      const hooks = yield* Effect.acquireRelease(
        Effect.sync(() =>
          Bun.serve({
            hostname: "127.0.0.1",
            port: 0,
            fetch: async (request) => {
              const body = await request.text()
              received.push({
                eventId: Option.match(Schema.decodeUnknownOption(Delivery)(body), { onNone: () => "", onSome: (e) => e.id }),
                status: answer,
                path: new URL(request.url).pathname,
                body,
                headers: Object.fromEntries(request.headers)
              })
              return new Response(null, { status: answer })
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
          .replace(/^SURVEY_API=http:\/\/localhost:8080$/m, `SURVEY_API=${server.base}`)
          .replaceAll("http://localhost:8080", server.base)
          .replaceAll("https://hooks.example.com", hookBase)
          .replace(/^KEY=sk_live_\.\.\..*$/m, `KEY=${key}`)
          .replaceAll("bun run src/main.ts", `bun ${join(root, "src", "main.ts")}`)

      const api = (method: string, path: string, body?: unknown) =>
        request(`${server.base}${path}`, {
          method,
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          ...(body === undefined ? {} : { body: JSON.stringify(body) })
        })
      const settingsOf = (path: string) => Effect.map(api("GET", path), (res) => Schema.decodeUnknownSync(Settings)(res.text))
      const workspaceHook = "/api/v1/webhooks"
      const surveyHook = "/api/v1/surveys/srv_demo_feedback/webhook"

      /**
       * A real outage for the recipe: the survey's webhook registered with its own filter, then an
       * answer that both webhooks get while the receiver answers 410, which switches both off.
       * Answers the settings the recipe must keep, and the events the outage lost.
       */
      const outage = Effect.gen(function*() {
        const registered = yield* api("PUT", surveyHook, { targetUrl: `${hookBase}/feedback`, events: ["response.created"] })
        expect(registered.status, registered.text).toBe(200)
        const secret = Schema.decodeUnknownSync(Registered)(registered.text).signingSecret
        const before = { workspace: yield* settingsOf(workspaceHook), survey: yield* settingsOf(surveyHook) }
        expect(before.workspace.enabled && before.survey.enabled).toBe(true)
        answer = 410
        const from = received.length
        const page = yield* request(`${server.base}/s/srv_demo_feedback`, { headers: { accept: "application/json" } })
        const token = Schema.decodeUnknownSync(Page)(page.text).respondentToken
        const started = yield* request(`${server.base}/respond/v1/responses`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({ answers: [
            { questionId: "q_demo_country", values: ["DE"] },
            { questionId: "q_demo_role", values: ["design"] },
            { questionId: "q_demo_nps", values: ["9"] }
          ],
          finished: true })
        })
        expect(started.status, started.text).toBe(201)
        yield* polled(
          "both webhooks to be switched off by the 410",
          Effect.all([settingsOf(workspaceHook), settingsOf(surveyHook)]),
          ([workspace, survey]) => !workspace.enabled && !survey.enabled
        )
        answer = 204
        const lost = new Set(received.slice(from).map((r) => r.eventId))
        return { before, secret, lost }
      })

      const examples = [...fencedBlocks("README.md", "sh"), ...fencedBlocks("docs/api.md", "sh")]
      const ran: Array<string> = []
      for (const { file, heading, text: script } of examples) {
        if (elsewhere(script)) continue
        // Each document's examples run in a directory of their own, as a reader following one would.
        const cwd = join(work, file.replace(/\W/g, "_"))
        Bun.spawnSync(["mkdir", "-p", cwd])
        const recipe = heading.endsWith(outageHeading) ? yield* outage : undefined
        // The outage recipe runs exactly as written: nothing in it is replaced.
        if (recipe !== undefined) expect(prepare(script)).toBe(script)
        const sentBefore = received.length
        writeFileSync(statuses, "")
        const run = yield* within(
          `the example under ${heading} to finish`,
          Effect.promise(async () => {
            const proc = Bun.spawn(["bash", "-c", `set -eo pipefail\n${prepare(script)}`], {
              cwd,
              env: { ...processEnv, ...database, PATH: `${bin}:${process.env.PATH ?? ""}`, KEY: key, SURVEY_API: server.base },
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
          // The quota example spends the burst on purpose: the 429 it then shows is the example working.
          if (status === "429") return !url.includes("/usage")
          return status === "000" || Number(status) >= 400
        })
        expect(broken, label).toEqual([])
        if (recipe !== undefined) {
          // Both webhooks are on again with what they had, and the events of the outage arrived.
          const after = { workspace: yield* settingsOf(workspaceHook), survey: yield* settingsOf(surveyHook) }
          expect(after).toEqual({
            workspace: { ...recipe.before.workspace, enabled: true, disabledReason: null },
            survey: { ...recipe.before.survey, enabled: true, disabledReason: null }
          })
          expect(recipe.lost.size).toBeGreaterThanOrEqual(2)
          yield* polled(
            "the events of the outage to arrive again",
            Effect.sync(() => new Set(received.slice(sentBefore).filter((r) => r.status === 204).map((r) => r.eventId))),
            (arrived) => [...recipe.lost].every((id) => arrived.has(id))
          )
          // The survey's webhook still signs with the secret it had: its deliveries verify with it.
          const resent = received.slice(sentBefore).filter((r) => r.path === "/feedback" && recipe.lost.has(r.eventId))
          expect(resent.length).toBeGreaterThan(0)
          for (const delivery of resent) expect(() => new Webhook(recipe.secret).verify(delivery.body, delivery.headers)).not.toThrow()
        }
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
