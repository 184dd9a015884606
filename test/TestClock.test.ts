import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Schema } from "effect"
import { join } from "node:path"
import { SurveyId } from "../src/Domain/Ids.js"
import { EmbedSessionRequest } from "../src/Embeds/Api.js"
import type { FixtureInput } from "../src/Fixtures/Fixture.js"
import type { AdvanceRequest } from "../src/TestClock/Api.js"
import { clientAt, completeShortAt } from "./support/ApiClient.js"
import { TOKENS } from "./support/Fixtures.js"
import { respondentFixture } from "./support/RespondentFixtures.js"
import { freePort, PROCESS_TEST_TIMEOUT, processEnv, request, serveProcess, sharedDatabase, within } from "./support/ServeProcess.js"
import { receiver } from "./support/WebhookReceiver.js"

const main = join(import.meta.dirname, "..", "src", "main.ts")
const TINY = "sk_test_tiny_aaaaaaaaaaaaaaaaaaa"
const START = "2026-03-01T00:00:00.000Z"

/** The respondent fixture, and an account whose plan allows 3 requests a day: its daily window is the one that shows. */
const fixture: FixtureInput = {
  ...respondentFixture,
  plans: [
    ...(respondentFixture.plans ?? []),
    { id: "tiny", apiAccess: true, burstLimit: 1000, burstWindowMinutes: 1, dailyLimit: 3, monthlyLimit: 1000 }
  ],
  accounts: [...(respondentFixture.accounts ?? []), { id: "acc_tiny", planId: "tiny" }],
  workspaces: [...(respondentFixture.workspaces ?? []), { id: "ws_tiny", ownerAccountId: "acc_tiny" }],
  members: [...(respondentFixture.members ?? []), { workspaceId: "ws_tiny", accountId: "acc_tiny", role: "owner" }],
  apiKeys: [
    ...(respondentFixture.apiKeys ?? []),
    { token: TINY, workspaceId: "ws_tiny", createdBy: "acc_tiny", surveyIds: null, revoked: false }
  ]
}

const json = (base: string, path: string, init: { method?: string; body?: unknown; token?: string; accept?: string } = {}) =>
  request(`${base}${path}`, {
    method: init.method ?? "GET",
    headers: {
      authorization: `Bearer ${init.token ?? TOKENS.editor}`,
      ...(init.body === undefined ? {} : { "content-type": "application/json" }),
      ...(init.accept === undefined ? {} : { accept: init.accept })
    },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) })
  })

const ErrorBody = Schema.parseJson(Schema.Struct({
  code: Schema.String,
  message: Schema.String,
  issues: Schema.optional(Schema.Array(Schema.Struct({ path: Schema.String, message: Schema.String })))
}))

/** Moves the clock of the process at `base` through the typed client: `by` is a duration, `to` an instant. */
const advance = (base: string, body: { readonly by: Duration.DurationInput } | { readonly to: string }) =>
  Effect.flatMap(clientAt(base, TOKENS.editor), (api) => {
    const payload: typeof AdvanceRequest.Type = "by" in body ? { by: Duration.toMillis(body.by) } : body
    return api.testClock.advance({ payload })
  })

/** An advance sent as written, in the wire's own ISO 8601 forms. */
const advanceAsWritten = (base: string, body: { readonly by: string }) =>
  Effect.gen(function*() {
    const res = yield* json(base, "/api/v1/test/clock/advance", { method: "POST", body })
    expect(res.status, res.text).toBe(200)
    return Schema.decodeUnknownSync(Schema.parseJson(Schema.Struct({ now: Schema.String })))(res.text)
  })


/** A command run to its end: its exit code and standard error. */
const exited = (args: ReadonlyArray<string>) =>
  within(
    `survey-service ${args.join(" ")} to exit`,
    Effect.promise(async () => {
      const proc = Bun.spawn(["bun", main, ...args], { env: processEnv, stdin: "ignore", stdout: "pipe", stderr: "pipe" })
      const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()])
      return { code, stderr }
    })
  )

const stop = (proc: { readonly kill: () => void; readonly exited: Promise<number> }) =>
  within("serve to stop", Effect.promise(() => {
    proc.kill()
    return proc.exited
  }))

// The Standard Webhooks schedule (decisions §7) after the first attempt, each delay stretched by at most 10 %.
const schedule = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]

describe("serve --test-clock", () => {
  it.live("walks a failing delivery through its retry schedule, then disables the webhook after 5 days", () =>
    Effect.gen(function*() {
      const { flags } = yield* sharedDatabase(fixture)
      const target = yield* receiver(() => new Response("down", { status: 500 }))
      const server = yield* serveProcess([...flags, "--test-clock", START])
      const api = yield* clientAt(server.base, TOKENS.editor)
      const put = yield* api.workspaceWebhooks.put({ payload: { targetUrl: target.url } })
      expect(put.signingSecret).toMatch(/^whsec_/)
      yield* completeShortAt(server.base)
      // The clock stands, and the first attempt goes out at once.
      yield* target.receivedAtLeast(1)

      const walked = yield* advance(server.base, { by: "2 days" })
      expect(walked.now).toBe("2026-03-03T00:00:00.000Z")
      // The first attempt's seven retries.
      expect(walked.deliveryAttempts).toBe(7)
      const received = yield* target.received
      expect(received).toHaveLength(8)
      const [clock, read] = yield* api.testClock.get({ withResponse: true })
      expect(clock.now).toBe("2026-03-03T00:00:00.000Z")
      const realNow = Date.parse(clock.realNow)
      // The HTTP Date header and the log's timestamps stay real.
      expect(Math.abs(Date.parse(read.headers["date"] ?? "") - realNow)).toBeLessThan(600_000)
      // The first line of the log says the clock is simulated.
      const firstLine = yield* server.logged("")
      expect(firstLine).toContain("clock simulated: the service's time is 2026-03-01T00:00:00.000Z")
      const logged = Schema.decodeUnknownSync(Schema.parseJson(Schema.Struct({ timestamp: Schema.String })))(firstLine)
      expect(Math.abs(Date.parse(logged.timestamp) - realNow)).toBeLessThan(600_000)
      // Signatures carry the real time, which receivers compare with their own clocks.
      for (const r of received) {
        expect(Math.abs(Number(r.headers["webhook-timestamp"]) * 1000 - realNow)).toBeLessThan(600_000)
      }
      const log = yield* api.workspaceWebhooks.deliveries({ urlParams: { limit: 50 } })
      const instants = log.data.map((a) => Date.parse(a.attemptedAt)).sort((a, b) => a - b)
      expect(instants[0]).toBe(Date.parse(START))
      expect(log.data.every((a) => !a.ok && a.responseStatus === 500)).toBe(true)
      const gaps = instants.slice(1).map((at, i) => at - (instants[i] ?? 0))
      expect(gaps).toHaveLength(schedule.length)
      gaps.forEach((gap, i) => {
        const delay = schedule[i] ?? 0
        expect(gap).toBeGreaterThanOrEqual(delay)
        expect(gap).toBeLessThanOrEqual(Math.ceil(delay * 1.1))
      })

      // Given up: nothing more comes in the next days.
      expect((yield* advance(server.base, { to: "2026-03-07T00:00:00+00:00" })).deliveryAttempts).toBe(0)
      // Past day 5 the next failed attempt, made at once, disables the webhook (X1.4).
      yield* completeShortAt(server.base)
      yield* target.receivedAtLeast(9)
      // An advance first lets the attempt under way be recorded; it makes none of its own.
      expect((yield* advance(server.base, { by: "1 minute" })).deliveryAttempts).toBe(0)
      const settings = yield* api.workspaceWebhooks.get()
      expect(settings.enabled).toBe(false)
      expect(settings.disabledReason).toBe("failing")
      const after = yield* api.workspaceWebhooks.deliveries({ urlParams: { limit: 50 } })
      expect(after.data[0]?.attemptedAt).toBe("2026-03-07T00:00:00.000Z")
      expect(yield* target.received).toHaveLength(9)
    }).pipe(Effect.scoped), PROCESS_TEST_TIMEOUT)

  it.live("expires embed sessions and resets the daily quota as the clock is advanced", () =>
    Effect.gen(function*() {
      const { flags } = yield* sharedDatabase(fixture)
      const server = yield* serveProcess([...flags, "--test-clock", START])
      const api = yield* clientAt(server.base, TOKENS.editor)
      const embed = () =>
        api.embedSessions.create({
          path: { id: SurveyId.make("srv_short") },
          payload: new EmbedSessionRequest({ externalUserId: "u1" }),
          headers: {}
        })
      const load = (url: string) => Effect.map(request(url, { headers: { accept: "application/json" } }), (res) => res.status)
      const early = yield* embed()
      expect(early.expiresAt).toBe("2026-03-01T01:00:00.000Z")
      yield* advance(server.base, { by: "59 minutes" })
      expect(yield* load(early.embedUrl)).toBe(200)
      const late = yield* embed()
      expect(late.expiresAt).toBe("2026-03-01T01:59:00.000Z")
      yield* advance(server.base, { by: "61 minutes" })
      expect(yield* load(late.embedUrl)).toBe(410)

      yield* advance(server.base, { to: "2026-03-01T22:00:00Z" })
      const tiny = yield* clientAt(server.base, TINY)
      const [first, firstAnswer] = yield* tiny.usage.get({ withResponse: true })
      expect(first).toMatchObject({ usedToday: 1, resetAt: "2026-03-02T00:00:00.000Z" })
      expect(firstAnswer.headers["ratelimit-reset"]).toBe("7200")
      yield* tiny.usage.get()
      yield* tiny.usage.get()
      expect((yield* Effect.flip(tiny.usage.get()))._tag).toBe("RateLimited")
      // Raw: the wait is in Retry-After, which the typed error does not carry.
      const refused = yield* json(server.base, "/api/v1/usage", { token: TINY })
      expect(refused.status).toBe(429)
      expect(refused.headers.get("retry-after")).toBe("7200")
      yield* advance(server.base, { by: "2 hours" })
      const [usage, nextDay] = yield* tiny.usage.get({ withResponse: true })
      expect(nextDay.status).toBe(200)
      expect(usage.usedToday).toBe(1)
      expect(usage.resetAt).toBe("2026-03-03T00:00:00.000Z")
      expect(nextDay.headers["ratelimit-reset"]).toBe("86400")
    }).pipe(Effect.scoped), PROCESS_TEST_TIMEOUT)

  it.live("refuses advances it cannot make with 400 invalid_request and the field at fault", () =>
    Effect.gen(function*() {
      const { flags } = yield* sharedDatabase(fixture)
      const server = yield* serveProcess([...flags, "--test-clock", START])
      const refusals: ReadonlyArray<readonly [unknown, string]> = [
        [{}, ""],
        [{ by: "PT1M", to: "2026-03-02T00:00:00Z" }, ""],
        [{ by: "5 minutes" }, "by"],
        [{ by: "P1M" }, "by"],
        [{ by: "P401D" }, "by"],
        [{ by: 60 }, "by"],
        [{ to: "2026-03-02T00:00:00" }, "to"],
        [{ to: "2026-02-28T23:59:59Z" }, "to"],
        [{ to: "2027-04-06T00:00:00Z" }, "to"]
      ]
      for (const [body, path] of refusals) {
        const res = yield* json(server.base, "/api/v1/test/clock/advance", { method: "POST", body })
        expect(res.status, JSON.stringify(body)).toBe(400)
        const error = Schema.decodeUnknownSync(ErrorBody)(res.text)
        expect(error.code).toBe("invalid_request")
        expect(error.issues?.map((i) => i.path), JSON.stringify(body)).toEqual([path])
      }
      const notJson = yield* request(`${server.base}/api/v1/test/clock/advance`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKENS.editor}`, "content-type": "application/json" },
        body: "{"
      })
      expect(notJson.status).toBe(400)
      // Nothing moved.
      const api = yield* clientAt(server.base, TOKENS.editor)
      expect((yield* api.testClock.get()).now).toBe(START)
      // At most 400 days, not before now: both ends are accepted, written as the wire writes them.
      expect((yield* advanceAsWritten(server.base, { by: "PT0S" })).now).toBe(START)
      expect((yield* advanceAsWritten(server.base, { by: "P400D" })).now).toBe("2027-04-05T00:00:00.000Z")
      // Editor keys only, of any workspace.
      const viewer = yield* clientAt(server.base, TOKENS.viewer)
      expect((yield* Effect.flip(viewer.testClock.get()))._tag).toBe("Forbidden")
      const other = yield* clientAt(server.base, TOKENS.other)
      expect((yield* other.testClock.get()).now).toBe("2027-04-05T00:00:00.000Z")
      const anonymous = yield* clientAt(server.base)
      expect((yield* Effect.flip(anonymous.testClock.get()))._tag).toBe("Unauthorized")
      const document = yield* request(`${server.base}/openapi.json`)
      expect(document.text).toContain("\"/api/v1/test/clock\"")
      expect(document.text).toContain("\"/api/v1/test/clock/advance\"")
    }).pipe(Effect.scoped), PROCESS_TEST_TIMEOUT)

  it.live("says on its first line that the clock is simulated whatever LOG_LEVEL says, also when TEST_CLOCK set it", () =>
    Effect.gen(function*() {
      const { flags } = yield* sharedDatabase(fixture)
      const proc = yield* Effect.acquireRelease(
        Effect.sync(() =>
          Bun.spawn(["bun", main, "serve", "--port", String(freePort()), ...flags], {
            env: { ...processEnv, LOG_LEVEL: "error", TEST_CLOCK: START },
            stdin: "ignore",
            stdout: "pipe",
            stderr: "ignore"
          })
        ),
        (p) => Effect.promise(() => (p.kill(), p.exited))
      )
      const firstLine = yield* within(
        "the first log line",
        Effect.promise(async () => {
          const reader = proc.stdout.getReader()
          const decoder = new TextDecoder()
          let text = ""
          while (!text.includes("\n")) {
            const chunk = await reader.read()
            if (chunk.done) break
            text += decoder.decode(chunk.value, { stream: true })
          }
          reader.releaseLock()
          return text.split("\n")[0] ?? ""
        })
      )
      expect(firstLine).toContain(`clock simulated: the service's time is ${START}`)
    }).pipe(Effect.scoped), PROCESS_TEST_TIMEOUT)

  it.live("has no test clock on a process without --test-clock: 404 not_found, and no trace in /openapi.json", () =>
    Effect.gen(function*() {
      const { flags } = yield* sharedDatabase(fixture)
      const server = yield* serveProcess(flags)
      for (const [method, path] of [["GET", "/api/v1/test/clock"], ["POST", "/api/v1/test/clock/advance"]] as const) {
        const res = yield* json(server.base, path, { method, ...(method === "POST" ? { body: { by: "P1D" } } : {}) })
        expect(res.status).toBe(404)
        expect(Schema.decodeUnknownSync(ErrorBody)(res.text).code).toBe("not_found")
      }
      const document = yield* request(`${server.base}/openapi.json`)
      expect(document.status).toBe(200)
      expect(document.text).not.toContain("test/clock")
      expect(document.text).not.toContain("TestClock")
      expect(document.text).not.toContain("Test-Clock")
      expect(document.headers.get("test-clock")).toBeNull()
    }).pipe(Effect.scoped), PROCESS_TEST_TIMEOUT)

  it.live("refuses to mix a simulated and a real clock on one database", () =>
    Effect.gen(function*() {
      // Imported only: either clock may serve it; the first serve marks it.
      const simulated = yield* sharedDatabase(fixture)
      const first = yield* serveProcess([...simulated.flags, "--test-clock"])
      expect(yield* first.logged("clock simulated")).toContain("stands still")
      yield* stop(first.proc)
      const plain = yield* exited(["serve", "--port", String(freePort()), ...simulated.flags])
      expect(plain.code).toBe(1)
      expect(plain.stderr.trim().split("\n")).toEqual([
        "error: this database was served on a simulated clock (serve --test-clock); without --test-clock it is refused, so that simulated instants never mix into real data"
      ])
      const migrate = yield* exited(["migrate", ...simulated.flags])
      expect(migrate.code).toBe(1)
      expect(migrate.stderr).toContain("served on a simulated clock")
      // Served again on a simulated clock: accepted.
      yield* stop((yield* serveProcess([...simulated.flags, "--test-clock", START])).proc)

      const real = yield* sharedDatabase(fixture)
      yield* stop((yield* serveProcess(real.flags)).proc)
      const refused = yield* exited(["serve", "--port", String(freePort()), ...real.flags, "--test-clock", START])
      expect(refused.code).toBe(1)
      expect(refused.stderr.trim().split("\n")).toEqual([
        "error: this database was served in real time; a --test-clock process refuses it, so that simulated instants never mix into real data"
      ])
      // The environment's TEST_CLOCK is a test clock too.
      const fromEnv = yield* within(
        "serve with TEST_CLOCK to exit",
        Effect.promise(async () => {
          const proc = Bun.spawn(["bun", main, "serve", "--port", String(freePort()), ...real.flags], {
            env: { ...processEnv, TEST_CLOCK: "now" },
            stdin: "ignore",
            stdout: "ignore",
            stderr: "pipe"
          })
          const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()])
          return { code, stderr }
        })
      )
      expect(fromEnv.code).toBe(1)
      expect(fromEnv.stderr).toContain("served in real time")
    }).pipe(Effect.scoped), PROCESS_TEST_TIMEOUT)
})
