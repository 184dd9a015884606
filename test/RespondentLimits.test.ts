import { HttpClient, HttpServerRequest } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { describe, expect, it, layer } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Either, Layer, Schema, TestClock } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { AppConfig } from "../src/Config.js"
import { addressKey, clientAddress, RespondentLimits } from "../src/Respondents/RespondentLimits.js"
import { WorkBatches } from "../src/Sql/Transactions.js"
import { quotaRowsElsewhere } from "./support/Elsewhere.js"
import { TOKENS } from "./support/Fixtures.js"
import { respondentFixture } from "./support/RespondentFixtures.js"
import { Count } from "./support/StoredRows.js"
import { type Answered, bodyOf, call, decodeAs, TestServer } from "./support/TestServer.js"

const PageBody = Schema.Struct({ respondentToken: Schema.String })
const ErrorBody = Schema.Struct({ code: Schema.String, message: Schema.String })

/** A survey page's JSON form, as a client at `address` behind the service's one trusted proxy asks for it. */
const load = (survey: string, address: string, accept = "application/json") =>
  call("GET", `/s/${survey}`, { headers: { accept, "x-forwarded-for": `198.51.100.1, ${address}` } })

const start = (token: string, address: string) =>
  call("POST", "/respond/v1/responses", {
    token,
    headers: { "x-forwarded-for": address },
    body: JSON.stringify({ answers: [{ questionId: "q_short_text", values: ["hello"] }], finished: false })
  })

const count = (statement: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(sql.unsafe(statement).pipe(Effect.orDie), (rows) => decodeAs(Schema.Array(Count), rows)[0]?.n ?? -1))

/** A refusal of a respondent limit: 429, the documented body, a whole number of seconds to wait, a request id. */
const expectLimited = (res: Answered) => {
  expect(res.status).toBe(429)
  expect(bodyOf(ErrorBody, res)).toEqual({ code: "rate_limited", message: expect.stringMatching(/^Too many requests/) })
  const wait = Number(res.headers["retry-after"])
  expect(Number.isInteger(wait) && wait >= 1 && wait <= 60).toBe(true)
  expect(res.headers["x-request-id"]).toMatch(/^req_/)
}

layer(TestServer(respondentFixture, { respondentLimitPerAddress: 3, respondentLimitPerSurvey: 6, trustProxyHops: 1 }))(
  "respondent limits per client address and per survey",
  (it) => {
    it.effect("a loop on one public link is refused past its limit; other addresses and surveys still answer; a minute later it answers again", () =>
      Effect.gen(function*() {
        const tokens: Array<string> = []
        for (let i = 0; i < 3; i++) {
          const res = yield* load("srv_short", "203.0.113.7")
          expect(res.status).toBe(200)
          tokens.push(bodyOf(PageBody, res).respondentToken)
        }
        expectLimited(yield* load("srv_short", "203.0.113.7"))
        // A browser gets a page with the same status and wait.
        const page = yield* load("srv_short", "203.0.113.7", "text/html")
        expect(page.status).toBe(429)
        expect(page.headers["content-type"]).toMatch(/^text\/html/)
        expect(page.headers["retry-after"]).toMatch(/^[1-9]\d*$/)
        expect(page.text).toContain("Too many requests")

        // Saves from that address are refused too, and write nothing.
        const responses = "SELECT count(*) AS n FROM responses WHERE survey_id = 'srv_short'"
        const events = "SELECT count(*) AS n FROM events"
        const before = [yield* count(responses), yield* count(events)]
        const token = tokens[0] ?? ""
        expectLimited(yield* start(token, "203.0.113.7"))
        expect([yield* count(responses), yield* count(events)]).toEqual(before)

        // Only the entry the trusted proxy appended counts: what the client claims left of it is ignored.
        expect((yield* load("srv_short", "203.0.113.8")).status).toBe(200)
        expect((yield* load("srv_all", "203.0.113.9")).status).toBe(200)
        expect((yield* start(token, "203.0.113.9")).status).toBe(201)

        // srv_short has now admitted 5 of its 6: one more address fills it, the next is refused for the survey.
        expect((yield* load("srv_short", "203.0.113.10")).status).toBe(200)
        const full = yield* load("srv_short", "203.0.113.11")
        expectLimited(full)
        expect(bodyOf(ErrorBody, full).message).toContain("for this survey")
        expect((yield* load("srv_all", "203.0.113.11")).status).toBe(200)

        yield* TestClock.adjust("60 seconds")
        expect((yield* load("srv_short", "203.0.113.7")).status).toBe(200)
        expect((yield* start(token, "203.0.113.7")).status).toBe(201)
      }))

    it.effect("IPv6 clients are counted by their /64 network", () =>
      Effect.gen(function*() {
        yield* TestClock.adjust("10 minutes")
        for (const host of ["1", "2", "3"]) expect((yield* load("srv_all", `2001:db8:7:1::${host}`)).status).toBe(200)
        expectLimited(yield* load("srv_all", "2001:db8:7:1:ffff::9"))
        expect((yield* load("srv_all", "2001:db8:7:2::1")).status).toBe(200)
      }))

    it.effect("the stored counts of addresses and surveys are deleted once they no longer count", () =>
      Effect.gen(function*() {
        const stored = Effect.map(
          quotaRowsElsewhere(`SELECT (SELECT count(*) FROM usage_daily WHERE account_id LIKE 'respondent-%')
            + (SELECT count(*) FROM usage_burst WHERE account_id LIKE 'respondent-%') AS n`),
          (rows) => decodeAs(Schema.Array(Count), rows)[0]?.n ?? -1
        )
        expect(yield* stored).toBeGreaterThan(10)
        yield* TestClock.adjust("1 day")
        const limits = yield* RespondentLimits
        // Three rows per statement: the sweep goes through many batches.
        const small = { ...(yield* WorkBatches), purge: 3 }
        expect(yield* limits.forget.pipe(Effect.provideService(WorkBatches, small))).toBeGreaterThan(10)
        expect(yield* stored).toBe(0)
        expect((yield* load("srv_all", "203.0.113.7")).status).toBe(200)
      }))

    it.effect("an embed URL loaded past the limit is not spent, and a PATCH past it changes nothing", () =>
      Effect.gen(function*() {
        yield* TestClock.adjust("2 minutes")
        const created = yield* call("POST", "/api/v1/surveys/srv_short/embed-sessions", {
          token: TOKENS.editor,
          body: JSON.stringify({ externalUserId: "person-limited" })
        })
        expect(created.status).toBe(201)
        const embedUrl = bodyOf(Schema.Struct({ embedUrl: Schema.String }), created).embedUrl
        const path = embedUrl.slice(embedUrl.indexOf("/embed/"))
        const embed = (address: string) =>
          call("GET", path, { headers: { accept: "application/json", "x-forwarded-for": address } })

        const page = yield* load("srv_short", "203.0.113.60")
        const token = bodyOf(PageBody, page).respondentToken
        const started = yield* start(token, "203.0.113.60")
        expect(started.status).toBe(201)
        const { responseId } = bodyOf(Schema.Struct({ responseId: Schema.String }), started)
        expect((yield* load("srv_short", "203.0.113.60")).status).toBe(200)

        expectLimited(yield* embed("203.0.113.60"))
        const patched = yield* call("PATCH", `/respond/v1/responses/${responseId}`, {
          token,
          headers: { "x-forwarded-for": "203.0.113.60" },
          body: JSON.stringify({ answers: [{ questionId: "q_short_text", values: ["changed"] }], finished: true })
        })
        expectLimited(patched)
        const stored = yield* call("GET", `/api/v1/surveys/srv_short/responses/${responseId}`, { token: TOKENS.editor })
        expect(bodyOf(Schema.Struct({ completed: Schema.Boolean }), stored).completed).toBe(false)

        const loaded = yield* embed("203.0.113.61")
        expect(loaded.status).toBe(200)
        expect(bodyOf(PageBody, loaded).respondentToken).toMatch(/^[A-Za-z0-9_-]{43}$/)
      }))
  }
)

describe("respondent limits across processes", () => {
  it.effect("two servers on one database admit one address's limit between them, not each", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "respondent-limits-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const settings = { databasePath: join(dir, "survey.db"), respondentLimitPerAddress: 10, trustProxyHops: 1 }
      const serve = (fixture: typeof respondentFixture | undefined) =>
        Effect.map(Layer.build(TestServer(fixture, settings)), (context) => Context.get(context, HttpClient.HttpClient))
      const first = yield* serve(respondentFixture)
      const second = yield* serve(undefined)
      const loads = (address: string) =>
        Effect.forEach(
          Array.from({ length: 30 }, (_, i) => i % 2 === 0 ? first : second),
          (client) => Effect.map(Effect.provideService(load("srv_all", address), HttpClient.HttpClient, client), (res) => res.status),
          { concurrency: 6 }
        )
      const statuses = yield* loads("203.0.113.50")
      expect(statuses.filter((s) => s === 200).length).toBe(10)
      expect(statuses.filter((s) => s === 429).length).toBe(20)

      yield* TestClock.adjust("60 seconds")
      const later = yield* loads("203.0.113.50")
      expect(later.filter((s) => s === 200).length).toBe(10)
    }).pipe(Effect.scoped))
})

describe("the client address of the respondent limits", () => {
  const request = (remote: string, forwarded?: string) =>
    HttpServerRequest.fromWeb(
      new Request("http://127.0.0.1/s/srv", { headers: forwarded === undefined ? {} : { "x-forwarded-for": forwarded } })
    ).modify({ remoteAddress: remote })

  it("is the connection's unless proxies are trusted; then the entry that many places from the right", () => {
    const forwarded = "10.9.9.9, 203.0.113.5, 198.51.100.7"
    expect(clientAddress(request("192.0.2.1", forwarded), 0)).toBe("192.0.2.1")
    expect(clientAddress(request("192.0.2.1", forwarded), 1)).toBe("198.51.100.7")
    expect(clientAddress(request("192.0.2.1", forwarded), 2)).toBe("203.0.113.5")
    // A list shorter than the proxies: its left-most entry, what the first proxy saw connect.
    expect(clientAddress(request("192.0.2.1", "203.0.113.5"), 3)).toBe("203.0.113.5")
    // No header, or an entry that is not an address: the connection's.
    expect(clientAddress(request("192.0.2.1"), 1)).toBe("192.0.2.1")
    expect(clientAddress(request("192.0.2.1", "203.0.113.5, unknown"), 1)).toBe("192.0.2.1")
  })

  it("counts IPv4 as it is, IPv4-mapped IPv6 as IPv4, IPv6 by its /64 network", () => {
    expect(addressKey("203.0.113.5")).toBe("203.0.113.5")
    expect(addressKey("::ffff:203.0.113.5")).toBe("203.0.113.5")
    expect(addressKey("2001:db8:0:1::5")).toBe("2001:db8:0:1::/64")
    expect(addressKey("2001:0db8:0000:0001:ffff:0:0:9")).toBe("2001:db8:0:1::/64")
    expect(addressKey("[2001:db8::1]")).toBe("2001:db8:0:0::/64")
    expect(addressKey("fe80::1%eth0")).toBe("fe80:0:0:0::/64")
    expect(addressKey("not-an-address")).toBeUndefined()
    expect(addressKey("2001:db8::1::2")).toBeUndefined()
  })

  it.effect("TRUST_PROXY takes false, true or a number of proxies; the limits take whole numbers from 1", () =>
    Effect.gen(function*() {
      const read = (env: Record<string, string>) =>
        Effect.either(AppConfig.fromEnv().pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))))
      const settings = yield* read({})
      expect(Either.getOrThrow(settings)).toMatchObject({
        trustProxyHops: 0,
        respondentLimitPerAddress: 1000,
        respondentLimitPerSurvey: 20000
      })
      expect(Either.getOrThrow(yield* read({ TRUST_PROXY: "true" })).trustProxyHops).toBe(1)
      expect(Either.getOrThrow(yield* read({ TRUST_PROXY: "2" })).trustProxyHops).toBe(2)
      expect(Either.getOrThrow(yield* read({ TRUST_PROXY: "off" })).trustProxyHops).toBe(0)
      expect(Either.isLeft(yield* read({ TRUST_PROXY: "11" }))).toBe(true)
      expect(Either.isLeft(yield* read({ TRUST_PROXY: "maybe" }))).toBe(true)
      expect(Either.isLeft(yield* read({ RESPONDENT_LIMIT_PER_ADDRESS: "0" }))).toBe(true)
      expect(Either.isLeft(yield* read({ RESPONDENT_LIMIT_PER_SURVEY: "1.5" }))).toBe(true)
      expect(Either.getOrThrow(yield* read({ RESPONDENT_LIMIT_PER_SURVEY: "50" })).respondentLimitPerSurvey).toBe(50)
    }))
})
