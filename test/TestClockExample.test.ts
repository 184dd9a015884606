import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { freePort, PROCESS_TEST_TIMEOUT, processEnv, within } from "./support/ServeProcess.js"
import { postgresDatabase, testDatabase } from "./support/TestServer.js"

const root = join(import.meta.dirname, "..")

/** The script of docs/api.md's "Testing on a simulated clock", as written there. */
const documentedScript = () => {
  const text = readFileSync(join(root, "docs", "api.md"), "utf8")
  const section = text.slice(text.indexOf("\n## Testing on a simulated clock\n"))
  const script = /```sh\n([\s\S]*?)\n```/.exec(section)?.[1]
  if (script === undefined) throw new Error("docs/api.md has no script under \"Testing on a simulated clock\"")
  return script
}

describe("docs/api.md: testing on a simulated clock", () => {
  it.live("runs as written, without a zero advance: the first attempt at once, seven retries over six simulated days, then the disable", () =>
    Effect.gen(function*() {
      const script = documentedScript()
      const absent = ["curl", "jq", "python3"].filter((tool) => Bun.which(tool) === null)
      expect(absent, `the documented script needs ${absent.join(", ")} (.ci/run installs curl and jq)`).toEqual([])
      // On the PostgreSQL pass the same script runs on a database of the test cluster: DATABASE_URL wins over --db.
      const url = testDatabase === "postgres" ? yield* postgresDatabase(undefined, { migrated: false }) : undefined
      const env = {
        ...processEnv,
        SURVEY_SERVICE: `bun ${join(root, "src", "main.ts")}`,
        PORT: String(freePort()),
        RECEIVER_PORT: String(freePort()),
        ...(url === undefined ? {} : { DATABASE_URL: url })
      }
      const run = yield* within(
        "the documented script to finish",
        Effect.promise(async () => {
          const proc = Bun.spawn(["bash", "-c", script], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" })
          const [code, stdout, stderr] = await Promise.all([
            proc.exited,
            new Response(proc.stdout).text(),
            new Response(proc.stderr).text()
          ])
          return { code, stdout, stderr }
        })
      )
      expect(run.code, run.stderr).toBe(0)
      expect(run.stdout).toContain("\"now\":\"2026-03-02T09:00:00.000Z\"")
      expect(run.stdout).toContain("\"now\":\"2026-03-08T09:00:00.000Z\",\"deliveryAttempts\":7")
      expect(script).not.toContain("PT0S")
      expect(run.stdout).toContain("\"disabledReason\":\"failing\"")
      expect(run.stdout).toContain("the receiver saw 9 deliveries")
      const attempts = run.stdout.split("\n").filter((line) => / 500$/.test(line))
      expect(attempts).toHaveLength(8)
      expect(attempts[0]).toBe("2026-03-02T09:00:00.000Z 500")
    }).pipe(Effect.scoped), PROCESS_TEST_TIMEOUT)
})
