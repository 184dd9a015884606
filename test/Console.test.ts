import { describe, expect, it, layer } from "@effect/vitest"
import { HttpServer } from "@effect/platform"
import { Effect } from "effect"
import { existsSync, mkdirSync } from "node:fs"
import type { BrowserContext, Page } from "playwright-core"
import { Webhook } from "standardwebhooks"
import { BackgroundLive } from "../src/App.js"
import { browserContext, CHROMIUM, pageErrors, seriousViolations } from "./support/Browser.js"
import { clientFor } from "./support/ApiClient.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { testDatabase, TestServer } from "./support/TestServer.js"
import { PROCESS_TEST_TIMEOUT, serveProcess, sharedDatabase } from "./support/ServeProcess.js"
import { receiver } from "./support/WebhookReceiver.js"

// The console drives the same API on either database; one pass (SQLite) keeps the suite's time.
const runs = existsSync(CHROMIUM) && testDatabase === "sqlite"
if (!existsSync(CHROMIUM)) console.warn(`Skipping the console browser tests: ${CHROMIUM} is missing (CI installs Debian's chromium).`)

const SHOTS = "test-artifacts/console"

/** Reads the page until the value matches (Playwright waits the same way); bounded at 20 s on a loaded machine. */
const poll = <T>(read: () => Promise<T> | T) => expect.poll(read, { timeout: 20_000 })

const serverOrigin = HttpServer.addressWith((address) =>
  Effect.succeed(address._tag === "TcpAddress" ? `http://127.0.0.1:${address.port}` : "")
)

const expectAccessible = async (page: Page, name: string) => {
  const violations = await seriousViolations(page)
  expect(violations, `axe on ${name}`).toEqual([])
  mkdirSync(SHOTS, { recursive: true })
  await page.screenshot({ path: `${SHOTS}/${name}.png`, fullPage: true })
}

const signIn = async (page: Page, origin: string, token: string) => {
  await page.goto(`${origin}/console`)
  await page.getByLabel("API key").fill(token)
  await page.getByRole("button", { name: "Sign in" }).click()
  await page.getByRole("button", { name: "Sign out" }).waitFor()
}

const status = (page: Page) => page.getByRole("status").first()

/** Answers the three questions on the survey's public page in a tab of its own. */
const answerOnPublicPage = async (context: BrowserContext, origin: string, surveyId: string, text: string, colour: string, score: string) => {
  const page = await context.newPage()
  await page.goto(`${origin}/s/${surveyId}`)
  await page.getByLabel("What did you like?").fill(text)
  await page.getByLabel(colour, { exact: true }).check()
  await page.getByLabel(score, { exact: true }).check()
  await page.getByRole("button", { name: "Submit" }).click()
  await page.getByRole("heading", { name: "Thank you!" }).waitFor()
  await page.close()
}

const addQuestion = async (page: Page, index: number, type: string, label: string, options: ReadonlyArray<string>) => {
  await page.getByRole("button", { name: "Add question" }).click()
  const card = page.locator(".question-edit").nth(index)
  await card.getByLabel("Type").selectOption({ label: type })
  await card.getByLabel("Question text").fill(label)
  for (const [i, option] of options.entries()) {
    await card.getByRole("button", { name: "Add option" }).click()
    await card.getByLabel(`Option ${i + 1} value`).fill(option)
  }
}


describe.skipIf(!runs)("the console in a real browser", () => {
  layer(TestServer(baseFixture, {}, { background: BackgroundLive }), { excludeTestServices: true })((it) => {
    it.scoped("an editor creates a survey, publishes it, sees its answers counted and its webhook deliver", () =>
      Effect.gen(function*() {
        const origin = yield* serverOrigin
        const hook = yield* receiver()
        const context = yield* browserContext({ width: 1280, height: 900 })
        const page = yield* Effect.promise(() => context.newPage())
        const errors = pageErrors(page)

        const surveyId = yield* Effect.promise(async () => {
          await page.goto(`${origin}/console`)
          await expectAccessible(page, "sign-in")
          await signIn(page, origin, TOKENS.editor)
          // The key is in this tab's sessionStorage only: not in the address, not in a cookie.
          expect(page.url()).not.toContain(TOKENS.editor)
          expect(await page.evaluate(() => document.cookie)).toBe("")
          expect(await page.evaluate(() => Object.values(sessionStorage))).toEqual([TOKENS.editor])
          await poll(() => page.locator(".who").textContent()).toContain("ws_a")
          await poll(() => page.locator(".who").textContent()).toContain("owner")
          await expectAccessible(page, "surveys")

          await page.getByLabel("Title", { exact: true }).fill("Console check")
          await page.getByRole("button", { name: "Create survey" }).click()
          await page.getByRole("heading", { name: "Title and description" }).waitFor()
          const id = /#\/surveys\/([^/]+)\/edit$/.exec(page.url())?.[1]
          if (id === undefined) throw new Error(`not on the editor: ${page.url()}`)

          await addQuestion(page, 0, "Text", "What did you like?", [])
          await addQuestion(page, 1, "Choice", "Pick a colour", ["Red", "Blue"])
          await addQuestion(page, 2, "Scale", "How likely?", ["1", "2", "3"])
          await page.getByRole("button", { name: "Save questions" }).click()
          await poll(() => status(page).textContent()).toBe("Questions saved.")

          // The webhook first, so that publishing and both answers are delivered.
          await page.getByRole("link", { name: "Webhook", exact: true }).click()
          await page.getByLabel("Target URL").fill(hook.url)
          await page.getByRole("button", { name: "Save webhook" }).click()
          await poll(() => page.getByTestId("signing-secret").textContent()).toMatch(/^whsec_/)
          await page.getByRole("button", { name: "I stored it" }).click()

          await page.getByRole("link", { name: "Editor" }).click()
          await page.getByRole("button", { name: "Publish" }).click()
          await poll(() => status(page).textContent()).toBe("The survey is published.")
          await expectAccessible(page, "editor")
          return id
        })

        yield* Effect.promise(async () => {
          await answerOnPublicPage(context, origin, surveyId, "The charts", "Blue", "3")
          await answerOnPublicPage(context, origin, surveyId, "The editor", "Blue", "2")

          await page.getByRole("link", { name: "Results" }).click()
          await page.getByRole("button", { name: "Refresh" }).click()
          await poll(() => page.getByTestId("response-count").textContent()).toBe("2")
          await poll(() => page.getByRole("img", { name: /^Pick a colour: answers per option/ }).getAttribute("aria-label"))
            .toBe("Pick a colour: answers per option. Red: 0, Blue: 2")
          await poll(() => page.getByRole("img", { name: /^How likely\?: answers per value/ }).getAttribute("aria-label"))
            .toBe("How likely?: answers per value. 1: 0, 2: 1, 3: 1")
          await poll(() => page.locator(".question-result").first().textContent()).toContain("2 text answers")
          await expectAccessible(page, "results")

          await page.getByRole("link", { name: "Responses" }).click()
          await poll(() => page.locator("tbody tr").count()).toBe(2)
          await page.locator("tbody tr button.link").first().click()
          await poll(() => page.locator(".answers").textContent()).toContain("Pick a colour")
          await expectAccessible(page, "responses")
        })

        // survey.published and two response.completed reach the receiver.
        const delivered = yield* hook.receivedAtLeast(3)
        const firstEventId = delivered[0]?.headers["webhook-id"] ?? ""
        const rotated = yield* Effect.promise(async () => {
          await page.getByRole("link", { name: "Webhook", exact: true }).click()
          await page.getByRole("button", { name: "Refresh log" }).click()
          await poll(() => page.locator("tbody tr").count()).toBe(3)
          await poll(() => page.locator("tbody").textContent()).toContain("survey.published")
          await expectAccessible(page, "webhook")

          await page.getByRole("button", { name: "Rotate secret" }).click()
          await poll(() => page.getByTestId("signing-secret").textContent()).toMatch(/^whsec_/)
          const secret = (await page.getByTestId("signing-secret").textContent()) ?? ""
          await page.getByRole("button", { name: "I stored it" }).click()
          await page.getByRole("button", { name: `Redeliver event ${firstEventId}` }).click()
          await page.getByRole("status").filter({ hasText: `Event ${firstEventId} is queued for delivery again.` }).waitFor()
          return secret
        })
        // The redelivery arrives signed with the new secret.
        const all = yield* hook.receivedAtLeast(4)
        const again = all[3]!
        expect(again.headers["webhook-id"]).toBe(firstEventId)
        expect(() => new Webhook(rotated).verify(again.body, again.headers)).not.toThrow()

        yield* Effect.promise(async () => {
          await page.getByRole("button", { name: "Refresh log" }).click()
          await poll(() => page.locator("tbody tr").count()).toBe(4)
          await page.getByRole("button", { name: "Remove webhook" }).click()
          await page.getByRole("button", { name: "Remove it" }).click()
          await page.getByRole("status").filter({ hasText: "The webhook is removed." }).waitFor()
          await poll(() => page.locator(".facts").textContent()).toContain("not set up")
          await page.getByRole("link", { name: "Usage" }).click()
          await page.getByRole("heading", { name: "Today" }).waitFor()
          await expectAccessible(page, "usage")
          await page.getByRole("link", { name: "Webhooks", exact: true }).click()
          await page.getByRole("heading", { name: "Workspace webhook" }).waitFor()
          await expectAccessible(page, "workspace-webhook")

          await page.getByRole("button", { name: "Sign out" }).click()
          await page.getByLabel("API key").waitFor()
          expect(await page.evaluate(() => sessionStorage.length)).toBe(0)
        })
        expect(errors).toEqual([])
      }), 240_000)

    it.scoped("a viewer's key finds no control that writes; a limited key sees its surveys only", () =>
      Effect.gen(function*() {
        const origin = yield* serverOrigin
        const context = yield* browserContext({ width: 375, height: 800 })
        const page = yield* Effect.promise(() => context.newPage())
        const errors = pageErrors(page)
        yield* Effect.promise(async () => {
          await signIn(page, origin, TOKENS.viewer)
          await poll(() => page.locator(".who").textContent()).toContain("viewer")
          const writes = /save|create|delete|publish|close$|trash|rotate|redeliver|recover|add |remove|send|move/i
          for (const hash of ["#/surveys", "#/surveys/srv_main/results", "#/surveys/srv_main/responses", "#/surveys/srv_main/edit", "#/surveys/srv_main/webhook", "#/webhooks", "#/usage"]) {
            await page.goto(`${origin}/console${hash}`)
            await page.getByRole("button", { name: "Sign out" }).waitFor()
            await poll(() => page.getByText("Loading…").count()).toBe(0)
            const buttons = await page.getByRole("button").allTextContents()
            expect(buttons.filter((name) => writes.test(name)), hash).toEqual([])
            // The only fields are the responses' filters.
            const fields = await page.locator("input, textarea, select").evaluateAll((els) => els.map((e) => e.id))
            expect(fields.filter((id) => !id.startsWith("f-")), hash).toEqual([])
            expect(await seriousViolations(page), hash).toEqual([])
          }
          await page.getByRole("button", { name: "Sign out" }).click()

          await signIn(page, origin, TOKENS.limited)
          await poll(() => page.locator(".who").textContent()).toContain("limited to 1 survey")
          await poll(() => page.locator("tbody tr").allTextContents()).toEqual([expect.stringContaining("Main")])
          expect(await page.getByRole("button", { name: "Create survey" }).count()).toBe(0)
          expect(await page.getByRole("link", { name: "Webhooks", exact: true }).count()).toBe(0)
        })
        expect(errors).toEqual([])
      }), 120_000)

    it.scoped("a survey with section headings opens read only in the editor, so that no save can drop them", () =>
      Effect.gen(function*() {
        const origin = yield* serverOrigin
        const context = yield* browserContext({ width: 1280, height: 900 })
        const page = yield* Effect.promise(() => context.newPage())
        yield* Effect.promise(async () => {
          await signIn(page, origin, TOKENS.editor)
          await page.goto(`${origin}/console#/surveys/srv_main/edit`)
          await page.getByText("This survey has section headings").waitFor()
          expect(await page.getByRole("button", { name: "Save questions" }).count()).toBe(0)
          expect(await seriousViolations(page)).toEqual([])
        })
      }), 120_000)

    it.scoped("a change saved in another tab meanwhile answers 412 and offers a reload; field errors sit beside their fields", () =>
      Effect.gen(function*() {
        const origin = yield* serverOrigin
        const api = yield* clientFor(TOKENS.editor)
        const { id } = yield* api.authoring.create({
          payload: { title: "Two tabs", questions: [{ id: "q_one", type: "textarea", label: "One" }] },
          headers: {}
        })
        const context = yield* browserContext({ width: 1280, height: 900 })
        const [first, second] = yield* Effect.promise(() => Promise.all([context.newPage(), context.newPage()]))
        yield* Effect.promise(async () => {
          for (const page of [first!, second!]) {
            await signIn(page, origin, TOKENS.editor)
            await page.goto(`${origin}/console#/surveys/${id}/edit`)
            await page.getByLabel("Title", { exact: true }).waitFor()
          }
          await first!.getByLabel("Title", { exact: true }).fill("Changed in the first tab")
          await first!.getByRole("button", { name: "Save title and description" }).click()
          await poll(() => status(first!).textContent()).toBe("Title and description saved.")

          await second!.getByLabel("Title", { exact: true }).fill("Changed in the second tab")
          await second!.getByRole("button", { name: "Save title and description" }).click()
          await second!.getByText("Someone else changed this survey").waitFor()
          await second!.getByRole("button", { name: "Reload the survey" }).click()
          await poll(() => second!.getByLabel("Title", { exact: true }).inputValue()).toBe("Changed in the first tab")

          // A 400: the question's empty text is refused, and the reason shows beside it.
          await second!.locator(".question-edit").first().getByLabel("Question text").fill("")
          await second!.getByRole("button", { name: "Save questions" }).click()
          await poll(() => second!.locator(".question-edit").first().locator(".field-error").count()).toBe(1)
        })
        const stored = yield* api.surveys.get({ path: { id } })
        expect(stored).toMatchObject({ title: "Changed in the first tab" })
      }), 120_000)
  })

  it.live("works on a process serving on the simulated clock (serve --test-clock)", () =>
    Effect.gen(function*() {
      const { flags } = yield* sharedDatabase(baseFixture)
      const server = yield* serveProcess([...flags, "--test-clock", "2026-03-02T09:00:00.000Z"])
      const context = yield* browserContext({ width: 1280, height: 900 })
      const page = yield* Effect.promise(() => context.newPage())
      const errors = pageErrors(page)
      yield* Effect.promise(async () => {
        await signIn(page, server.base, TOKENS.editor)
        await page.locator("tbody tr").first().waitFor()
        await page.getByRole("link", { name: "Usage", exact: true }).click()
        // The day resets at the simulated clock's next midnight.
        await page.getByText("resets 2026-03-03 00:00:00 UTC").waitFor()
      })
      expect(errors).toEqual([])
    }).pipe(Effect.scoped), PROCESS_TEST_TIMEOUT)
})
