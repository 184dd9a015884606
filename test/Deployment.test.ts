import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const docs = join(import.meta.dirname, "..", "docs")

/** The first fenced block of `language` in docs/deployment.md. */
const block = (language: string) => {
  const guide = readFileSync(join(docs, "deployment.md"), "utf8")
  const found = new RegExp("```" + language + "\\n([\\s\\S]*?)```").exec(guide)?.[1]
  if (found === undefined) throw new Error(`docs/deployment.md has no ${language} block`)
  return found
}

const run = (command: ReadonlyArray<string>) =>
  Effect.promise(async () => {
    const proc = Bun.spawn([...command], { stdout: "pipe", stderr: "pipe" })
    const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
    return { code, output: `${stdout}${stderr}` }
  })

/** A command on this machine's PATH, or the reason its check is skipped. */
const tool = (name: string) => {
  const path = Bun.which(name)
  return path === null
    ? { run: it.skip, named: (what: string) => `${what} (skipped: ${name} is not installed)`, path: name }
    : { run: it, named: (what: string) => what, path }
}

describe("docs/deployment.md", () => {
  const systemd = tool("systemd-analyze")
  systemd.run(systemd.named("its systemd unit passes systemd-analyze verify"), () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "survey-unit-"))
      try {
        // The unit names the binary where the guide installs it; verify checks that it is executable.
        const unit = block("ini").replaceAll("/opt/survey-service/survey-service", process.execPath)
        expect(unit).toContain("ExecStart=")
        const file = join(dir, "survey-service.service")
        writeFileSync(file, unit)
        const verified = yield* run([systemd.path, "verify", "--man=no", file])
        expect(verified.output).toBe("")
        expect(verified.code).toBe(0)
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    }))

  it("its alerting rules read metrics the guide lists, with a summary each", () => {
    const Rules = Schema.Struct({
      groups: Schema.Array(Schema.Struct({
        name: Schema.String,
        rules: Schema.Array(Schema.Struct({
          alert: Schema.String,
          expr: Schema.String,
          annotations: Schema.Struct({ summary: Schema.String })
        }))
      }))
    })
    const rules = Schema.decodeUnknownSync(Rules)(Bun.YAML.parse(readFileSync(join(docs, "prometheus-rules.yml"), "utf8")))
    const guide = readFileSync(join(docs, "deployment.md"), "utf8")
    const alerts = rules.groups.flatMap((group) => group.rules)
    expect(alerts.length).toBeGreaterThan(5)
    const read = alerts.flatMap((rule) => [...rule.expr.matchAll(/\b(?:http_server|webhook|analytics|quota|process|nodejs)_[a-z0-9_]+/g)].map((m) => m[0]))
    const unlisted = read.filter((name) => !guide.includes(`\`${name.replace(/_bucket$/, "")}\``))
    expect(unlisted).toEqual([])
  })

  const promtool = tool("promtool")
  promtool.run(promtool.named("its alerting rules (docs/prometheus-rules.yml) pass promtool check rules"), () =>
    Effect.gen(function*() {
      const checked = yield* run([promtool.path, "check", "rules", join(docs, "prometheus-rules.yml")])
      expect(checked.output).toContain("SUCCESS")
      expect(checked.code).toBe(0)
    }))
})
