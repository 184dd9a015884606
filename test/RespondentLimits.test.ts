import { HttpClient, HttpServerRequest } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { describe, expect, it, layer } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Either, Layer, Schema, TestClock } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { AppConfig } from "../src/Config.js"
import { addressKey, clientAddress, parseAddress, trustedProxies } from "../src/Http/ClientAddress.js"
import { afterOne, fairShareOf, waitMs, WINDOW_MS } from "../src/Respondents/AdmissionTable.js"
import { RespondentLimits } from "../src/Respondents/RespondentLimits.js"
import { quotaRowsElsewhere } from "./support/Elsewhere.js"
import { ResponseId, SurveyId } from "../src/Domain/Ids.js"
import { EmbedSessionRequest } from "../src/Embeds/Api.js"
import { clientFor } from "./support/ApiClient.js"
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

/** The test's client reaches the server from the loopback: as a reverse proxy on the same host would. */
const behindProxy = { trustedProxies: ["127.0.0.0/8", "::1/128"] }

layer(TestServer(respondentFixture, { respondentLimitPerAddress: 3, respondentLimitPerSurvey: 6, ...behindProxy }))(
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

        // srv_short has now admitted 5 of its 6: one more address fills it. A new address still
        // gets its fair share (one request a minute of a survey limited to 6), then is refused for the survey.
        expect((yield* load("srv_short", "203.0.113.10")).status).toBe(200)
        expect((yield* load("srv_short", "203.0.113.11")).status).toBe(200)
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

    it.effect("the limits store nothing; the hourly sweep drops the entries whose allowance is whole again", () =>
      Effect.gen(function*() {
        const stored = Effect.map(
          quotaRowsElsewhere(`SELECT (SELECT count(*) FROM usage_daily WHERE account_id LIKE 'respondent-%')
            + (SELECT count(*) FROM usage_burst WHERE account_id LIKE 'respondent-%') AS n`),
          (rows) => decodeAs(Schema.Array(Count), rows)[0]?.n ?? -1
        )
        expect(yield* stored).toBe(0)
        const limits = yield* RespondentLimits
        expect((yield* limits.entries).addresses).toBeGreaterThan(5)
        yield* TestClock.adjust("1 minute")
        expect(yield* limits.forget).toBe(0)
        expect(yield* limits.entries).toMatchObject({ addresses: 0, surveys: 0, pairs: 0 })
        expect((yield* load("srv_all", "203.0.113.7")).status).toBe(200)
      }))

    it.effect("an embed URL loaded past the limit is not spent, and a PATCH past it changes nothing", () =>
      Effect.gen(function*() {
        yield* TestClock.adjust("2 minutes")
        const api = yield* clientFor(TOKENS.editor)
        const short = { id: SurveyId.make("srv_short") }
        const { embedUrl } = yield* api.embedSessions.create({
          path: short,
          payload: new EmbedSessionRequest({ externalUserId: "person-limited" }),
          headers: {}
        })
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
        const stored = yield* api.responses.get({ path: { ...short, responseId: ResponseId.make(responseId) } })
        expect(stored.completed).toBe(false)

        const loaded = yield* embed("203.0.113.61")
        expect(loaded.status).toBe(200)
        expect(bodyOf(PageBody, loaded).respondentToken).toMatch(/^[A-Za-z0-9_-]{43}$/)
      }))
  }
)

describe("a key's allowance when the clock steps", () => {
  it("a limit used up waits for its next share; a clock stepped back a day starts the key whole, not a day late", () => {
    const now = Date.parse("2026-06-01T12:00:00.000Z")
    let fullAt: number | undefined
    for (let i = 0; i < 3; i++) {
      expect(waitMs(fullAt, now, 3)).toBe(0)
      fullAt = afterOne(fullAt, now, 3)
    }
    expect(waitMs(fullAt, now, 3)).toBe(WINDOW_MS / 3)
    // Back a day: the key's instant lies further ahead than an admission ever sets it.
    expect(waitMs(fullAt, now - 86_400_000, 3)).toBe(0)
    expect(afterOne(fullAt, now - 86_400_000, 3)).toBe(now - 86_400_000 + WINDOW_MS / 3)
  })
})

describe("respondent limits across processes", () => {
  it.effect("are per process: two servers on one database admit an address's limit each", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "respondent-limits-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const settings = { databasePath: join(dir, "survey.db"), respondentLimitPerAddress: 10, ...behindProxy }
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
      expect(statuses.filter((s) => s === 200).length).toBe(20)
      expect(statuses.filter((s) => s === 429).length).toBe(10)

      yield* TestClock.adjust("60 seconds")
      const later = yield* loads("203.0.113.50")
      expect(later.filter((s) => s === 200).length).toBe(20)
    }).pipe(Effect.scoped))
})

describe("the client address of the respondent limits", () => {
  const request = (remote: string, forwarded?: string) =>
    HttpServerRequest.fromWeb(
      new Request("http://127.0.0.1/s/srv", { headers: forwarded === undefined ? {} : { "x-forwarded-for": forwarded } })
    ).modify({ remoteAddress: remote })
  const proxies = trustedProxies(["10.0.0.0/8", "2001:db8:ffff::/48"])
  const none = trustedProxies([])

  it("believes X-Forwarded-For only from a trusted proxy, read from the right past the trusted ones", () => {
    const forwarded = "192.0.2.66, 203.0.113.5, 10.1.1.1"
    // No proxies trusted, or a peer that is not one: the connection's address, whatever it forwards.
    expect(clientAddress(request("10.0.0.2", forwarded), none)).toBe("10.0.0.2")
    expect(clientAddress(request("198.51.100.9", forwarded), proxies)).toBe("198.51.100.9")
    // From a trusted proxy: the first entry from the right that is not a trusted proxy.
    expect(clientAddress(request("10.0.0.2", forwarded), proxies)).toBe("203.0.113.5")
    expect(clientAddress(request("2001:db8:ffff::1", "203.0.113.5"), proxies)).toBe("203.0.113.5")
    // Every entry a trusted proxy: the left-most.
    expect(clientAddress(request("10.0.0.2", "10.3.3.3, 10.1.1.1"), proxies)).toBe("10.3.3.3")
    // No header, or an entry that is not an address: the proxy that appended it.
    expect(clientAddress(request("10.0.0.2"), proxies)).toBe("10.0.0.2")
    expect(clientAddress(request("10.0.0.2", "203.0.113.5, unknown"), proxies)).toBe("10.0.0.2")
    expect(clientAddress(request("10.0.0.2", "203.0.113.5, unknown, 10.1.1.1"), proxies)).toBe("10.1.1.1")
  })

  it("strips ports from the peer and from forwarded entries", () => {
    expect(parseAddress("1.2.3.4:5678")).toBe("1.2.3.4")
    expect(parseAddress("[::1]:80")).toBe("::1")
    expect(parseAddress("[2001:DB8::1]")).toBe("2001:db8::1")
    expect(parseAddress("::ffff:10.0.0.2")).toBe("10.0.0.2")
    expect(parseAddress("1.2.3.4:99999999")).toBeUndefined()
    expect(parseAddress("example.org:80")).toBeUndefined()
    expect(clientAddress(request("10.0.0.2:41000", "203.0.113.5:5678"), proxies)).toBe("203.0.113.5")
    expect(clientAddress(request("[2001:db8:ffff::1]:443", "[2001:db8:7:1::9]:80"), proxies)).toBe("2001:db8:7:1::/64")
    expect(clientAddress(request("::ffff:10.0.0.2", "203.0.113.5"), proxies)).toBe("203.0.113.5")
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

  it.effect("TRUST_PROXY takes proxies' addresses and networks; true (or an earlier version's count) means loopback and private networks", () =>
    Effect.gen(function*() {
      const read = (env: Record<string, string>) =>
        Effect.either(AppConfig.fromEnv().pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))))
      const proxiesOf = (value: string) => Effect.map(read({ TRUST_PROXY: value }), (settings) => Either.getOrThrow(settings).trustedProxies)
      const settings = yield* read({})
      expect(Either.getOrThrow(settings)).toMatchObject({
        trustedProxies: [],
        respondentLimitPerAddress: 1000,
        respondentLimitPerSurvey: 20000,
        respondentLimitEntries: 50000
      })
      expect(yield* proxiesOf("off")).toEqual([])
      expect(yield* proxiesOf(" 10.0.0.0/8, 192.0.2.7 ,2001:DB8::/32, loopback")).toEqual([
        "10.0.0.0/8",
        "192.0.2.7/32",
        "2001:db8::/32",
        "127.0.0.0/8",
        "::1/128"
      ])
      const usual = yield* proxiesOf("true")
      expect(usual).toContain("127.0.0.0/8")
      expect(usual).toContain("10.0.0.0/8")
      expect(usual).toContain("fc00::/7")
      expect(yield* proxiesOf("2")).toEqual(usual)
      expect(yield* proxiesOf("loopback,private")).toEqual(usual)
      const trusted = trustedProxies(usual)
      expect(["127.0.0.1", "10.9.8.7", "192.168.1.1", "fd00::1", "::1"].every(trusted.trusts)).toBe(true)
      expect(["203.0.113.5", "8.8.8.8", "2001:db8::1"].some(trusted.trusts)).toBe(false)
      for (const bad of ["maybe", "11", "10.0.0.0/33", "2001:db8::/129", "10.0.0.0/8/1", "1.2.3.4:80", "example.org"]) {
        expect(Either.isLeft(yield* read({ TRUST_PROXY: bad }))).toBe(true)
      }
      expect(Either.isLeft(yield* read({ RESPONDENT_LIMIT_PER_ADDRESS: "0" }))).toBe(true)
      expect(Either.isLeft(yield* read({ RESPONDENT_LIMIT_PER_SURVEY: "1.5" }))).toBe(true)
      expect(Either.isLeft(yield* read({ RESPONDENT_LIMIT_ENTRIES: "10" }))).toBe(true)
      expect(Either.getOrThrow(yield* read({ RESPONDENT_LIMIT_PER_SURVEY: "50" })).respondentLimitPerSurvey).toBe(50)
    }))
})

layer(TestServer(respondentFixture, { respondentLimitPerAddress: 3, trustedProxies: ["10.0.0.0/8"] }))(
  "X-Forwarded-For from a peer that is not a trusted proxy",
  (it) => {
    it.effect("is ignored: every load counts against the connection's address", () =>
      Effect.gen(function*() {
        for (const address of ["203.0.113.1", "203.0.113.2", "203.0.113.3"]) {
          expect((yield* load("srv_all", address)).status).toBe(200)
        }
        expectLimited(yield* load("srv_all", "203.0.113.4"))
      }))
  }
)

layer(TestServer(respondentFixture, { respondentLimitPerAddress: 1000, respondentLimitPerSurvey: 200, ...behindProxy }))(
  "a survey at its limit",
  (it) => {
    it.effect("still serves a new address its fair share while a few heavy addresses flood it", () =>
      Effect.gen(function*() {
        const share = fairShareOf(200)
        expect(share).toBe(2)
        const heavy = ["198.51.100.11", "198.51.100.12", "198.51.100.13", "198.51.100.14", "198.51.100.15"]
        const statuses = yield* Effect.forEach(
          Array.from({ length: 300 }, (_, i) => heavy[i % heavy.length] ?? ""),
          (address) => Effect.map(load("srv_all", address), (res) => res.status),
          { concurrency: 8 }
        )
        // The survey's limit, and no more: the heavy addresses used their shares within it.
        expect(statuses.filter((s) => s === 200).length).toBe(200)
        expect(statuses.filter((s) => s === 429).length).toBe(100)
        for (const address of heavy) expectLimited(yield* load("srv_all", address))

        // A new address is served its share, then refused for the survey like the rest.
        for (let i = 0; i < share; i++) expect((yield* load("srv_all", "192.0.2.200")).status).toBe(200)
        const over = yield* load("srv_all", "192.0.2.200")
        expectLimited(over)
        expect(bodyOf(ErrorBody, over).message).toContain("for this survey")
        // Another survey is not affected.
        expect((yield* load("srv_short", heavy[0] ?? "")).status).toBe(200)
      }))
  }
)

describe("a flood of page loads from 10,000 distinct addresses", () => {
  it.effect("leaves every table's row count as it was, and the limits' tables at their fixed size", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "respondent-flood-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const capacity = 1000
      const settings = { databasePath: join(dir, "survey.db"), respondentLimitPerAddress: 2, respondentLimitEntries: capacity, ...behindProxy }
      yield* Effect.gen(function*() {
        const rowCounts = Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const tables = decodeAs(
            Schema.Array(Schema.Struct({ name: Schema.String })),
            yield* sql.onDialectOrElse({
              pg: () => sql`SELECT table_name AS name FROM information_schema.tables
                WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name`,
              orElse: () => sql`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`
            }).pipe(Effect.orDie)
          )
          const counts: Record<string, number> = {}
          for (const { name } of tables) counts[name] = yield* count(`SELECT count(*) AS n FROM "${name}"`)
          // On SQLite the request quota's counters are in a file of their own.
          const quota = yield* quotaRowsElsewhere("SELECT (SELECT count(*) FROM usage_daily) + (SELECT count(*) FROM usage_burst) AS n")
          counts["quota file or tables"] = decodeAs(Schema.Array(Count), quota)[0]?.n ?? -1
          return counts
        })
        const before = yield* rowCounts
        expect(Object.keys(before).length).toBeGreaterThan(10)

        const addressOf = (i: number) => `10${Math.floor(i / 65536) + 1}.${Math.floor(i / 256) % 256}.${i % 256}.7`
        const statuses = yield* Effect.forEach(
          Array.from({ length: 10_000 }, (_, i) => i),
          (i) => Effect.map(load("srv_all", i % 2 === 0 ? addressOf(i) : `2001:db8:${(i % 65536).toString(16)}:${i}::1`), (res) => res.status),
          { concurrency: 32 }
        )
        expect(statuses.every((s) => s === 200)).toBe(true)
        expect(yield* rowCounts).toEqual(before)

        const limits = yield* RespondentLimits
        expect(yield* limits.entries).toEqual({ addresses: capacity, surveys: 1, pairs: capacity, capacity })
        // Still limiting: an address past its limit is refused, and the tables stay at their size.
        expect((yield* load("srv_all", "203.0.113.99")).status).toBe(200)
        expect((yield* load("srv_all", "203.0.113.99")).status).toBe(200)
        expectLimited(yield* load("srv_all", "203.0.113.99"))
        expect((yield* limits.entries).addresses).toBe(capacity)
      }).pipe(Effect.provide(TestServer(respondentFixture, settings)))
    }).pipe(Effect.scoped), 900_000)
})
