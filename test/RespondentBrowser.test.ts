import { describe, expect, layer } from "@effect/vitest"
import { HttpServer } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { existsSync, mkdirSync } from "node:fs"
import type { FrameLocator, Page } from "playwright-core"
import { EventEnvelope } from "../src/Domain/Event.js"
import { ResponsePage } from "../src/Responses/Api.js"
import { browserContext, CHROMIUM } from "./support/Browser.js"
import { TOKENS } from "./support/Fixtures.js"
import { respondentFixture } from "./support/RespondentFixtures.js"
import { bodyOf, call, decodeAs, get, TestServer } from "./support/TestServer.js"

const hasChromium = existsSync(CHROMIUM)
if (!hasChromium) {
  console.warn(`Skipping the survey page browser test: ${CHROMIUM} is missing (CI installs Debian's chromium).`)
}

const EmbedSessionBody = Schema.Struct({ embedUrl: Schema.String })
/** A page of responses as the API encodes it. */
const ResponsesBody = Schema.encodedSchema(ResponsePage)

/** The integrator's page: another origin (its own server) that frames the embed URL. */
const hostPage = Effect.acquireRelease(
  Effect.sync(() =>
    Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: (request) => {
        const src = new URL(request.url).searchParams.get("embed") ?? ""
        const escaped = src.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;")
        return new Response(
          `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Integrator app</title></head>
<body style="margin:0;font-family:sans-serif"><header style="padding:8px;background:#222;color:#fff">Integrator app</header>
<iframe src="${escaped}" title="Customer survey" style="display:block;width:100%;height:2400px;border:0"></iframe></body></html>`,
          { headers: { "content-type": "text/html; charset=utf-8" } }
        )
      }
    })
  ),
  (server) => Effect.promise(() => server.stop(true))
)

const serverOrigin = HttpServer.addressWith((address) =>
  Effect.succeed(address._tag === "TcpAddress" ? `http://127.0.0.1:${address.port}` : "")
)

const createEmbedUrl = (origin: string, externalUserId: string) =>
  Effect.gen(function*() {
    const res = yield* call("POST", "/api/v1/surveys/srv_all/embed-sessions", {
      token: TOKENS.editor,
      body: JSON.stringify({ externalUserId })
    })
    expect(res.status).toBe(201)
    // The configured public base URL is not known before the test server binds its port.
    return `${origin}${new URL(bodyOf(EmbedSessionBody, res).embedUrl).pathname}`
  })

const question = (frame: FrameLocator, id: string) => frame.locator(`.question[data-question-id="${id}"]`)

/** Answers every question of `srv_all` with mouse and keyboard, and returns the heatmap point it placed. */
const answerEverything = async (page: Page, frame: FrameLocator) => {
  // Step 1: keyboard for text, a filtered country list, a date picker.
  await frame.getByLabel("Your email").click()
  await page.keyboard.type("browser.person@example.com")
  await frame.getByLabel("Filter countries").click()
  await page.keyboard.type("nether")
  await page.keyboard.press("ArrowDown")
  await expect.poll(() => question(frame, "q_all_country").locator("select").inputValue()).toBe("NL")
  await frame.getByLabel("Customer since").fill("2024-02-29")
  await expect.poll(() => frame.locator("#progress-text").textContent()).toBe("Step 1 of 2")
  await frame.getByRole("button", { name: "Next" }).click()
  await expect.poll(() => frame.locator("#form-status").textContent()).toBe("Saved.")
  await expect.poll(() => frame.locator("#progress-text").textContent()).toBe("Step 2 of 2")

  // Step 2: choices by mouse and keyboard.
  await frame.getByText("Product manager").click()
  await question(frame, "q_all_colours").getByAltText("red").click()
  await question(frame, "q_all_colours").locator("input[value=blue]").focus()
  await page.keyboard.press("Space")
  await question(frame, "q_all_scale").getByText("3", { exact: true }).click()
  await page.keyboard.press("ArrowRight")
  await frame.getByLabel("Seats").click()
  await page.keyboard.type("7.50")

  // Ranking: drag Docs to the top with the mouse, then move Price up with the keyboard.
  const rank = question(frame, "q_all_rank")
  const docsHandle = rank.locator(".sort-item[data-value=docs] .handle")
  const firstItem = rank.locator(".sort-item").first()
  await rank.scrollIntoViewIfNeeded()
  const from = await docsHandle.boundingBox()
  const to = await firstItem.boundingBox()
  if (from === null || to === null) throw new Error("ranking items are not visible")
  await page.mouse.move(from.x + from.width / 2, from.y + from.height / 2)
  await page.mouse.down()
  await page.mouse.move(from.x + from.width / 2, to.y + 4, { steps: 8 })
  await page.mouse.up()
  await expect.poll(() => rank.locator(".sort-item").evaluateAll((items) => items.map((i) => i.getAttribute("data-value"))))
    .toEqual(["docs", "speed", "price"])
  await rank.getByRole("button", { name: "Move Price up" }).focus()
  await page.keyboard.press("Enter")
  await expect.poll(() => rank.locator(".sort-item").evaluateAll((items) => items.map((i) => i.getAttribute("data-value"))))
    .toEqual(["docs", "price", "speed"])

  // Heatmap: click on the picture, then nudge the point right with the keyboard.
  const heat = question(frame, "q_all_heat")
  const picture = heat.locator(".heatmap")
  await expect.poll(() => heat.locator("img").evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0)).toBe(true)
  await picture.scrollIntoViewIfNeeded()
  const box = await picture.boundingBox()
  if (box === null) throw new Error("heatmap picture is not visible")
  await page.mouse.click(box.x + box.width * 0.25, box.y + box.height * 0.5)
  const clicked = (await heat.getAttribute("data-point"))!.split(",").map(Number)
  expect(clicked[0]).toBeCloseTo(0.25, 1)
  expect(clicked[1]).toBeCloseTo(0.5, 1)
  await picture.focus()
  await page.keyboard.press("ArrowRight")
  const point = (await heat.getAttribute("data-point"))!
  expect(Number(point.split(",")[0])).toBeCloseTo(clicked[0]! + 0.05, 4)

  await frame.getByLabel("Anything else?").click()
  await page.keyboard.type("Works in a frame, too.")
  await frame.getByRole("button", { name: "Submit" }).focus()
  await page.keyboard.press("Enter")
  await frame.getByRole("heading", { name: "Thank you!" }).waitFor()
  return point
}

/** Presses Tab (at most 80 times) until the element matching `selector` has focus. */
const tabTo = async (page: Page, selector: string) => {
  for (let i = 0; i < 80; i++) {
    if (await page.locator(selector).evaluate((el) => el === document.activeElement)) return
    await page.keyboard.press("Tab")
  }
  throw new Error(`Tab never reached ${selector}`)
}

/** Answers every question of `srv_all` with the keyboard alone. */
const answerWithKeyboardOnly = async (page: Page) => {
  const keys = (...names: Array<string>) => names.reduce((p, name) => p.then(() => page.keyboard.press(name)), Promise.resolve())
  await tabTo(page, "#q1-in")
  await page.keyboard.type("keys@example.com")
  await keys("Tab")
  await page.keyboard.type("japan")
  await keys("ArrowDown")
  await tabTo(page, "#q3-in")
  await page.keyboard.type("02292024")
  await tabTo(page, "#next")
  await keys("Enter")
  await page.getByRole("heading", { name: "Your opinion" }).waitFor()
  await tabTo(page, "#q5-o0")
  await keys("ArrowDown")
  await tabTo(page, "#q6-o0")
  await keys("Space", "Tab", "Tab", "Space")
  await tabTo(page, "#q7-o0")
  await keys("ArrowRight", "ArrowRight", "ArrowRight")
  await tabTo(page, "#q8-in")
  await page.keyboard.type("12")
  await tabTo(page, ".sort-item[data-value=docs] button[data-move='-1']")
  await keys("Enter", "Enter")
  await tabTo(page, "#q10-in")
  await keys("Enter", "ArrowDown")
  await tabTo(page, "#q11-in")
  await page.keyboard.type("Only keys.")
  await tabTo(page, "#next")
  await keys("Enter")
  await page.getByRole("heading", { name: "Thank you!" }).waitFor()
}

describe.skipIf(!hasChromium)("survey pages in a real browser", () => {
  layer(TestServer(respondentFixture), { excludeTestServices: true })((it) => {
    it.scoped("a respondent answers every question type in an embed framed by another origin", () =>
      Effect.gen(function*() {
        const origin = yield* serverOrigin
        const host = yield* hostPage
        const embedUrl = yield* createEmbedUrl(origin, "browser-user-1")
        const context = yield* browserContext({ width: 1024, height: 900 })

        const page = yield* Effect.promise(() => context.newPage())
        const pageErrors: Array<string> = []
        page.on("pageerror", (error) => pageErrors.push(error.message))
        // Console errors include Content-Security-Policy violations and failed requests.
        page.on("console", (message) => {
          if (message.type() === "error") pageErrors.push(message.text())
        })
        yield* Effect.promise(() => page.goto(`http://127.0.0.1:${host.port}/?embed=${encodeURIComponent(embedUrl)}`))
        const frame = page.frameLocator("iframe")
        yield* Effect.promise(() => frame.getByRole("heading", { name: "About you" }).waitFor())
        mkdirSync("test-artifacts", { recursive: true })
        yield* Effect.promise(() => page.screenshot({ path: "test-artifacts/survey-framed-desktop.png" }))
        const point = yield* Effect.promise(() => answerEverything(page, frame))
        expect(pageErrors).toEqual([])

        const list = yield* get("/api/v1/surveys/srv_all/responses?status=completed", TOKENS.editor)
        const responses = bodyOf(ResponsesBody, list).data.filter((r) => r.externalUserId === "browser-user-1")
        expect(responses).toHaveLength(1)
        const [response] = responses
        if (response === undefined) return yield* Effect.dieMessage("no completed response of browser-user-1")
        expect(response.completed).toBe(true)
        expect(response.answers.map((a) => [a.fieldId, a.value, a.values])).toEqual([
          ["q_all_email", "browser.person@example.com", ["browser.person@example.com"]],
          ["q_all_country", "NL", ["NL"]],
          ["q_all_since", "2024-02-29", ["2024-02-29"]],
          ["q_all_role", "pm", ["pm"]],
          ["q_all_colours", JSON.stringify(["red", "blue"]), ["red", "blue"]],
          ["q_all_scale", "4", ["4"]],
          ["q_all_seats", "7.5", ["7.5"]],
          ["q_all_rank", JSON.stringify(["docs", "price", "speed"]), ["docs", "price", "speed"]],
          ["q_all_heat", point, [point]],
          ["q_all_comment", "Works in a frame, too.", ["Works in a frame, too."]]
        ])

        const sql = yield* SqlClient.SqlClient
        const events = decodeAs(
          Schema.Array(Schema.Struct({ payload: Schema.String })),
          yield* sql`SELECT payload FROM events WHERE type = 'response.completed' AND survey_id = 'srv_all'`
            .pipe(Effect.orDie)
        )
        const mine = events.map((e) => decodeAs(Schema.parseJson(EventEnvelope), e.payload))
          .filter((e) => e.data.responseId === response.id)
        expect(mine).toHaveLength(1)
        expect(mine[0]?.data.externalUserId).toBe("browser-user-1")

        // The one-time URL is spent: loading it again shows the friendly page.
        yield* Effect.promise(() => page.goto(embedUrl))
        expect(yield* Effect.promise(() => page.getByRole("heading", { name: "This link was already used" }).isVisible()))
          .toBe(true)
      }))

    it.scoped("the survey page can be completed with the keyboard alone", () =>
      Effect.gen(function*() {
        const origin = yield* serverOrigin
        const embedUrl = yield* createEmbedUrl(origin, "browser-user-keys")
        const context = yield* browserContext({ width: 800, height: 900 })
        const page = yield* Effect.promise(() => context.newPage())
        yield* Effect.promise(() => page.goto(embedUrl))
        yield* Effect.promise(() => answerWithKeyboardOnly(page))
        const done = yield* get("/api/v1/surveys/srv_all/responses?status=completed&limit=100", TOKENS.editor)
        const mine = bodyOf(ResponsesBody, done)
          .data.filter((r) => r.externalUserId === "browser-user-keys")
        expect(mine).toHaveLength(1)
        expect(mine[0]?.answers.map((a) => [a.fieldId, a.value])).toEqual([
          ["q_all_email", "keys@example.com"],
          ["q_all_country", "JP"],
          ["q_all_since", "2024-02-29"],
          ["q_all_role", "pm"],
          ["q_all_colours", JSON.stringify(["red", "blue"])],
          ["q_all_scale", "4"],
          ["q_all_seats", "12"],
          ["q_all_rank", JSON.stringify(["docs", "speed", "price"])],
          ["q_all_heat", "0.5,0.55"],
          ["q_all_comment", "Only keys."]
        ])
      }))

    it.scoped("the survey page is readable at phone width and can be completed there", () =>
      Effect.gen(function*() {
        const origin = yield* serverOrigin
        const embedUrl = yield* createEmbedUrl(origin, "browser-user-phone")
        const context = yield* browserContext({ width: 390, height: 844 })
        const page = yield* Effect.promise(() => context.newPage())
        yield* Effect.promise(() => page.goto(embedUrl))
        const overflow = yield* Effect.promise(() =>
          page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)
        )
        expect(overflow).toBe(0)
        mkdirSync("test-artifacts", { recursive: true })
        yield* Effect.promise(() => page.screenshot({ path: "test-artifacts/survey-phone-step1.png", fullPage: true }))

        // Required questions are checked inline before anything is sent.
        yield* Effect.promise(() => page.getByRole("button", { name: "Next" }).click())
        const error = page.locator("#err-q1")
        yield* Effect.promise(() => error.waitFor())
        expect(yield* Effect.promise(() => error.textContent())).toBe("Please answer this question.")
        yield* Effect.promise(() => page.screenshot({ path: "test-artifacts/survey-phone-invalid.png", fullPage: true }))
        const started = yield* get("/api/v1/surveys/srv_all/responses?status=all&limit=100", TOKENS.editor)
        expect(bodyOf(ResponsesBody, started).data
          .filter((r) => r.externalUserId === "browser-user-phone")).toEqual([])

        yield* Effect.promise(async () => {
          await page.getByLabel("Your email").fill("phone@example.com")
          await page.getByLabel("Filter countries").fill("Japan")
          await page.getByRole("button", { name: "Next" }).click()
          await page.getByText("Developer").click()
          await page.locator(".question[data-question-id=q_all_scale]").getByText("5", { exact: true }).click()
          await page.screenshot({ path: "test-artifacts/survey-phone-step2.png", fullPage: true })
          await page.getByRole("button", { name: "Submit" }).click()
          await page.getByRole("heading", { name: "Thank you!" }).waitFor()
          await page.screenshot({ path: "test-artifacts/survey-phone-thanks.png", fullPage: true })
        })
        const done = yield* get("/api/v1/surveys/srv_all/responses?status=completed&limit=100", TOKENS.editor)
        const mine = bodyOf(ResponsesBody, done)
          .data.filter((r) => r.externalUserId === "browser-user-phone")
        expect(mine).toHaveLength(1)
        expect(mine[0]?.answers.map((a) => [a.fieldId, a.value])).toEqual([
          ["q_all_email", "phone@example.com"],
          ["q_all_country", "JP"],
          ["q_all_role", "dev"],
          ["q_all_scale", "5"]
        ])
      }))
  })
})
