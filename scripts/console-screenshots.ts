// Screenshots of every console page at 1280 px for docs/console.md, on the demo data: starts the
// service with `--demo` on a fresh database in a temporary folder, a webhook receiver on
// 127.0.0.1 that refuses its first delivery, and Debian's Chromium. `bun run docs:console`.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { chromium, type Page } from "playwright-core"

const root = join(import.meta.dirname, "..")
const out = join(root, "docs/console")
const work = mkdtempSync(join(tmpdir(), "console-shots-"))
const port = 20000 + Math.floor(Math.random() * 20000)

const server = Bun.spawn(["bun", join(root, "src/main.ts"), "serve", "--demo", "--host", "127.0.0.1", "--port", String(port), "--db", join(work, "demo.db")], {
  env: { ...process.env, WEBHOOK_ALLOW_PRIVATE_TARGETS: "true", LOG_LEVEL: "Warning" },
  stdout: "pipe",
  stderr: "inherit"
})
let received = 0
const receiver = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: () => (++received === 1 ? new Response("not yet", { status: 503 }) : new Response("ok"))
})

const keys = async () => {
  const reader = server.stdout.getReader()
  let text = ""
  for (let i = 0; i < 200; i++) {
    const { done, value } = await reader.read()
    if (done) break
    text += new TextDecoder().decode(value)
    const editor = /editor key: (\S+)/.exec(text)?.[1]
    const viewer = /viewer key: (\S+)/.exec(text)?.[1]
    if (editor !== undefined && viewer !== undefined) return { editor, viewer }
  }
  throw new Error(`the demo server printed no keys: ${text}`)
}

const origin = `http://127.0.0.1:${port}`
const shot = (page: Page, name: string) => page.screenshot({ path: join(out, `${name}.png`) })

try {
  const { editor } = await keys()
  for (let i = 0; i < 100; i++) {
    if ((await fetch(`${origin}/healthz`).catch(() => null))?.ok === true) break
    await Bun.sleep(100)
  }
  mkdirSync(out, { recursive: true })
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox", "--disable-gpu"] })
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
  await page.goto(`${origin}/console`)
  await page.getByLabel("API key").waitFor()
  await shot(page, "sign-in")
  await page.getByLabel("API key").fill(editor)
  await page.getByRole("button", { name: "Sign in" }).click()
  await page.locator("tbody tr").first().waitFor()
  await shot(page, "surveys")

  await page.goto(`${origin}/console#/surveys/srv_demo_feedback/results`)
  await page.locator(".question-result").first().waitFor()
  await page.getByRole("heading", { name: "What is your role?" }).scrollIntoViewIfNeeded()
  await shot(page, "results")

  await page.goto(`${origin}/console#/surveys/srv_demo_feedback/responses`)
  await page.locator("tbody button.link").first().click()
  await page.locator(".answers").waitFor()
  await shot(page, "responses")

  await page.goto(`${origin}/console#/surveys/srv_demo_feedback/edit`)
  await page.locator(".question-edit").first().waitFor()
  await page.getByRole("heading", { name: "Questions" }).scrollIntoViewIfNeeded()
  await shot(page, "editor")

  await page.goto(`${origin}/console#/surveys/srv_demo_feedback/webhook`)
  await page.getByLabel("Target URL").fill(`http://127.0.0.1:${receiver.port}/hooks/surveys`)
  await page.getByRole("button", { name: "Save webhook" }).click()
  await page.getByRole("button", { name: "I stored it" }).click()
  for (const _ of [1, 2]) {
    await page.getByRole("button", { name: "Send a test event" }).click()
    await page.getByRole("status").filter({ hasText: "test event" }).waitFor()
  }
  await page.getByRole("button", { name: "Rotate secret" }).click()
  await page.getByTestId("signing-secret").waitFor()
  await page.locator("tbody tr").nth(1).waitFor()
  await shot(page, "webhook")

  await page.goto(`${origin}/console#/usage`)
  await page.getByRole("heading", { name: "Today" }).waitFor()
  await shot(page, "usage")

  const phone = await browser.newPage({ viewport: { width: 375, height: 800 } })
  await phone.goto(`${origin}/console`)
  await phone.getByLabel("API key").fill(editor)
  await phone.getByRole("button", { name: "Sign in" }).click()
  await phone.goto(`${origin}/console#/surveys/srv_demo_feedback/results`)
  await phone.locator(".question-result").first().waitFor()
  await shot(phone, "results-375")
  await browser.close()
  console.log(`screenshots written to ${out}`)
} finally {
  server.kill()
  await server.exited
  await receiver.stop(true)
  rmSync(work, { recursive: true, force: true })
}
