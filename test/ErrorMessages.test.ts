import { HttpClient, HttpClientRequest } from "@effect/platform"
import { HttpApiClient } from "@effect/platform"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Api } from "../src/Api.js"
import { InvalidRequest, type Issue } from "../src/Domain/Errors.js"
import { SurveyId } from "../src/Domain/Ids.js"
import { MAX_ISSUES } from "../src/Http/Issues.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { TestServer } from "./support/TestServer.js"

/**
 * The typed client, its requests' bodies replaced by `body` as it is: the client encodes only
 * what its schemas admit, and these bodies are the ones they do not. The answer is decoded by the
 * client, so an error arrives as the typed `InvalidRequest` the document declares.
 */
const sending = (body: unknown) =>
  HttpApiClient.make(Api, {
    transformClient: HttpClient.mapRequest((request) =>
      HttpClientRequest.bodyUnsafeJson(HttpClientRequest.bearerToken(request, TOKENS.editor), body)
    )
  })

const valid = { questions: [{ type: "textarea" as const, label: "ok" }] }

/** PUT …/questions with `body`: the issues of its 400. */
const questionIssues = (body: unknown) =>
  Effect.gen(function*() {
    const api = yield* sending(body)
    const error = yield* api.authoring.replaceQuestions({
      path: { id: SurveyId.make("srv_draft") },
      headers: {},
      payload: valid
    }).pipe(Effect.flip)
    if (!(error instanceof InvalidRequest)) return yield* Effect.dieMessage(`not an invalid_request: ${String(error)}`)
    return error
  })

/** PUT /webhooks with `body`: its 400. */
const webhookError = (body: unknown) =>
  Effect.gen(function*() {
    const api = yield* sending(body)
    const error = yield* api.workspaceWebhooks.put({ payload: { targetUrl: "https://example.com/hook" } }).pipe(Effect.flip)
    if (!(error instanceof InvalidRequest)) return yield* Effect.dieMessage(`not an invalid_request: ${String(error)}`)
    return error
  })

const at = (issues: ReadonlyArray<Issue> | undefined, path: string) => (issues ?? []).filter((issue) => issue.path === path).map((i) => i.message)

/** No message shows the schema library's own wording. */
const readsWell = (error: InvalidRequest) => {
  for (const text of [error.message, ...(error.issues ?? []).map((issue) => issue.message)]) {
    expect(text).not.toMatch(/Expected |, actual |undefined|ReadonlyArray|readonly \[/)
  }
}

layer(TestServer(baseFixture))("validation messages (decisions §2)", (it) => {
  it.effect("a union of values names every value it takes", () =>
    Effect.gen(function*() {
      const error = yield* questionIssues({ questions: [{ type: "bogus", label: "B" }] })
      expect(error.issues).toEqual([{
        path: "questions.0.type",
        message: "must be one of textarea, email, checkbox, number, calendar, country, heatmap, scale, sort, section (got \"bogus\")"
      }])
      expect(error.message).toBe(
        "Invalid `questions.0.type`: must be one of textarea, email, checkbox, number, calendar, country, heatmap, scale, sort, section (got \"bogus\")."
      )
      const events = yield* webhookError({ targetUrl: "https://example.com/hook", events: ["response.completed", "nope"] })
      expect(at(events.issues, "events.1")[0]).toMatch(/^must be one of response\.completed, survey\.published, .* \(got "nope"\)$/)
      readsWell(events)
    }))

  it.effect("bounds read as sentences", () =>
    Effect.gen(function*() {
      for (const rate of [0, 1.5, 5000, "20"]) {
        const error = yield* webhookError({ targetUrl: "https://example.com/hook", maxAttemptsPerSecond: rate })
        expect(error.issues, String(rate)).toEqual([
          { path: "maxAttemptsPerSecond", message: "must be an integer from 1 to 1000, or null for no limit" }
        ])
        readsWell(error)
      }
      const api = yield* sending({ title: "x".repeat(501) })
      const long = yield* api.authoring.update({ path: { id: SurveyId.make("srv_draft") }, headers: {}, payload: {} }).pipe(Effect.flip)
      if (!(long instanceof InvalidRequest)) return yield* Effect.dieMessage("not an invalid_request")
      expect(long.issues).toEqual([{ path: "title", message: "must be text of 1 to 500 characters" }])
    }))

  it.effect("an empty list that must hold something says so, never `Expected undefined`", () =>
    Effect.gen(function*() {
      const error = yield* webhookError({ targetUrl: "https://example.com/hook", events: [] })
      expect(error.issues).toEqual([{ path: "events", message: "must hold at least one item" }])
      readsWell(error)
      const repeated = yield* webhookError({ targetUrl: "https://example.com/hook", events: ["survey.closed", "survey.closed"] })
      expect(repeated.issues).toEqual([{ path: "events.1", message: "`survey.closed` is listed more than once" }])
    }))

  it.effect("missing, unknown and mistyped fields, and empty text", () =>
    Effect.gen(function*() {
      const error = yield* questionIssues({
        questions: [
          { label: "no type" },
          { type: "email", label: "E", requird: true },
          { type: "textarea", label: 5, required: "yes" },
          { type: "textarea", label: "" }
        ]
      })
      expect(at(error.issues, "questions.0.type")).toEqual(["is required"])
      expect(at(error.issues, "questions.1.requird")).toEqual([
        "is not a field here; the fields are id, type, label, required, allowMultiple, options, settings"
      ])
      expect(at(error.issues, "questions.2.label")).toEqual(["must be text of 1 to 2,000 characters"])
      expect(at(error.issues, "questions.2.required")).toEqual(["must be true or false (got \"yes\")"])
      expect(at(error.issues, "questions.3.label")).toEqual(["must be text of 1 to 2,000 characters"])
      readsWell(error)
    }))

  it.effect("every problem of a body is one issue, up to the cap, and the message counts them", () =>
    Effect.gen(function*() {
      const four = yield* questionIssues({
        questions: [
          { type: "textarea", label: "fine" },
          { type: "bogus", label: "B" },
          { type: "email", label: "" },
          { type: "heatmap", label: "H", settings: { imageUrl: "ftp://example.com/a.png" } },
          { type: "textarea", label: "T", settings: { colour: "red" } }
        ]
      })
      expect((four.issues ?? []).map((issue) => issue.path)).toEqual([
        "questions.1.type",
        "questions.2.label",
        "questions.3.settings.imageUrl",
        "questions.4.settings.colour"
      ])
      expect(four.message).toMatch(/\(3 more problems in `issues`\)$/)
      expect(at(four.issues, "questions.3.settings.imageUrl")[0]).toMatch(/^must be an https URL or a path of this service/)
      readsWell(four)

      const many = yield* questionIssues({ questions: Array.from({ length: 30 }, () => ({ type: "bogus", label: "" })) })
      expect(many.issues).toHaveLength(MAX_ISSUES)
      expect(many.message).toMatch(/\(59 more problems; the first 20 are listed in `issues`\)$/)
    }))

  it.effect("a body that is not an object says what it must be", () =>
    Effect.gen(function*() {
      const error = yield* questionIssues([])
      expect(error.issues).toEqual([{ path: "", message: "the body must be a JSON object (got [])" }])
      expect(error.message).toBe("Invalid request: the body must be a JSON object (got []).")
    }))
})
