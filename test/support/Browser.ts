import { Effect, Schema } from "effect"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { chromium, type Page } from "playwright-core"

export const CHROMIUM = "/usr/bin/chromium"

/** A real headless Chromium with a fresh profile, closed (and its profile removed) with the scope. */
export const browserContext = (viewport: { width: number; height: number }) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const profile = mkdtempSync(join(tmpdir(), "survey-chromium-"))
      const context = await chromium.launchPersistentContext(profile, {
        executablePath: CHROMIUM,
        headless: true,
        args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
        viewport,
        locale: "en-US"
      })
      return { context, profile }
    }),
    ({ context, profile }) =>
      Effect.promise(async () => {
        await context.close()
        rmSync(profile, { recursive: true, force: true })
      })
  ).pipe(Effect.map(({ context }) => context))

const axeSource = readFileSync(join(import.meta.dirname, "../../node_modules/axe-core/axe.min.js"), "utf8")

const Violations = Schema.Array(Schema.Struct({
  id: Schema.String,
  impact: Schema.NullOr(Schema.String),
  help: Schema.String,
  nodes: Schema.Array(Schema.String)
}))

/**
 * axe-core run in the page (injected through the DevTools protocol, which the page's CSP does not
 * govern): the violations of serious or critical impact, each with the elements it names.
 */
export const seriousViolations = async (page: Page) => {
  await page.evaluate(axeSource)
  const found = await page.evaluate(`axe.run(document, { resultTypes: ["violations"] }).then((r) => r.violations.map((v) => ({
    id: v.id, impact: v.impact ?? null, help: v.help, nodes: v.nodes.map((n) => n.target.join(" "))
  })))`)
  return Schema.decodeUnknownSync(Violations)(found).filter((v) => v.impact === "serious" || v.impact === "critical")
}

/** Collects the page's errors: script errors, and console errors, which include CSP violations and failed requests. */
export const pageErrors = (page: Page) => {
  const errors: Array<string> = []
  page.on("pageerror", (error) => errors.push(error.message))
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(message.text())
  })
  return errors
}
