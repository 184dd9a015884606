import { describe, expect, layer } from "@effect/vitest"
import { Database } from "bun:sqlite"
import { Effect, Layer, Schema } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Usage } from "../src/Quota/Api.js"
import { quotaFilePath } from "../src/Quota/QuotaFileSql.js"
import { clientFor } from "./support/ApiClient.js"
import { QUOTA_TOKENS, quotaFixture } from "./support/QuotaFixtures.js"
import { type Answered, bodyOf, get, TestServer, testDatabase } from "./support/TestServer.js"
import { advance } from "./support/Advance.js"

const rateHeaders = (res: Answered) => ({
  limit: res.headers["ratelimit-limit"],
  remaining: res.headers["ratelimit-remaining"],
  reset: res.headers["ratelimit-reset"]
})

const usageOf = (res: Answered): typeof Usage.Type => Schema.decodeUnknownSync(Usage)(res.body)

/** The operations of each path in the OpenAPI document, as far as the tests read them. */
const OpenApiPaths = Schema.Struct({
  paths: Schema.Record({
    key: Schema.String,
    value: Schema.Struct({
      get: Schema.optional(Schema.Struct({ responses: Schema.Record({ key: Schema.String, value: Schema.Unknown }) }))
    })
  })
})
const ResponseIds = Schema.Struct({ data: Schema.Array(Schema.Struct({ id: Schema.String })) })

layer(TestServer(quotaFixture))("RateLimit headers, 429 and GET /usage", (it) => {
  it.effect("a burst of 5 shows 4, 3, 2, 1, 0; the 6th is 429 with Retry-After and the error body", () =>
    Effect.gen(function*() {
      const seen: Array<ReturnType<typeof rateHeaders>> = []
      for (let i = 0; i < 5; i++) {
        const res = yield* get(i % 2 === 0 ? "/api/v1/surveys" : "/api/v1/surveys/srv_q/responses", QUOTA_TOKENS.first)
        expect(res.status).toBe(200)
        seen.push(rateHeaders(res))
      }
      expect(seen.map((h) => h.remaining)).toEqual(["4", "3", "2", "1", "0"])
      expect(seen.every((h) => h.limit === "5" && h.reset === "60")).toBe(true)

      // The second key of the same account shares the counters.
      const limited = yield* get("/api/v1/usage", QUOTA_TOKENS.second)
      expect(limited.status).toBe(429)
      expect(limited.body).toEqual({ code: "rate_limited", message: expect.any(String) })
      expect(limited.headers["retry-after"]).toBe("60")
      expect(rateHeaders(limited)).toEqual({ limit: "5", remaining: "0", reset: "60" })
      expect(limited.headers["x-request-id"]).toMatch(/^req_/)

      yield* advance("45 seconds")
      const still = yield* get("/api/v1/surveys", QUOTA_TOKENS.first)
      expect(still.status).toBe(429)
      expect(still.headers["retry-after"]).toBe("15")

      // 429s did not count: once the window slid past the burst, requests pass again and the day holds 5 + 1.
      yield* advance("15 seconds")
      const usage = yield* get("/api/v1/usage", QUOTA_TOKENS.second)
      expect(usage.status).toBe(200)
      expect(usageOf(usage)).toEqual({
        burstLimit: 5,
        burstWindowMinutes: 1,
        dailyLimit: 8,
        usedToday: 6,
        remainingToday: 2,
        monthlyLimit: 12,
        resetAt: "1970-01-02T00:00:00.000Z"
      })
      // The daily limit now has the least remaining: 2 left, resetting at midnight.
      expect(rateHeaders(usage)).toEqual({ limit: "8", remaining: "2", reset: String(86_400 - 60) })
    }))

  it.effect("errors after the plan gate count too, and the daily limit answers 429 until midnight", () =>
    Effect.gen(function*() {
      const missing = yield* get("/api/v1/surveys/srv_nope", QUOTA_TOKENS.first)
      expect(missing.status).toBe(404)
      expect(missing.headers["ratelimit-remaining"]).toBe("1")
      const first = yield* clientFor(QUOTA_TOKENS.first)
      const last = yield* first.usage.get()
      expect(last.usedToday).toBe(8)
      expect(last.remainingToday).toBe(0)
      yield* advance("5 minutes")
      const refused = yield* get("/api/v1/usage", QUOTA_TOKENS.first)
      expect(refused.status).toBe(429)
      expect(refused.headers["retry-after"]).toBe(String(86_400 - 6 * 60))
      yield* advance(`${86_400 - 6 * 60} seconds`)
      const nextDay = yield* first.usage.get()
      expect(nextDay).toMatchObject({ usedToday: 1, remainingToday: 7, resetAt: "1970-01-03T00:00:00.000Z" })
    }))

  it.effect("other accounts of the workspace have their own counters; unauthenticated answers carry no quota headers", () =>
    Effect.gen(function*() {
      const colleague = yield* get("/api/v1/usage", QUOTA_TOKENS.colleague)
      expect(colleague.status).toBe(200)
      expect(usageOf(colleague)).toMatchObject({ burstLimit: 120, dailyLimit: 10_000, usedToday: 1 })
      expect(rateHeaders(colleague)).toEqual({ limit: "120", remaining: "119", reset: "60" })
      const anonymous = yield* get("/api/v1/usage")
      expect(anonymous.status).toBe(401)
      expect(anonymous.headers["ratelimit-limit"]).toBeUndefined()
    }))

  it.effect("the OpenAPI document describes GET /usage with its 429 and 503", () =>
    Effect.gen(function*() {
      const doc = yield* get("/openapi.json")
      const paths = bodyOf(OpenApiPaths, doc).paths
      expect(Object.keys(paths["/api/v1/usage"]?.get?.responses ?? {})).toEqual(
        expect.arrayContaining(["200", "401", "403", "429", "503"])
      )
    }))

  it.effect("a creator whose own plan has no quota is refused with 429", () =>
    Effect.gen(function*() {
      const res = yield* get("/api/v1/surveys", QUOTA_TOKENS.freeCreator)
      expect(res.status).toBe(429)
      expect(res.body).toMatchObject({ code: "rate_limited" })
      expect(Number(res.headers["retry-after"])).toBeGreaterThanOrEqual(1)
      expect(res.headers["ratelimit-remaining"]).toBe("0")
    }))
})

layer(TestServer(quotaFixture))("concurrency", (it) => {
  it.effect("200 parallel requests against burstLimit 50 let exactly 50 through", () =>
    Effect.gen(function*() {
      const answers = yield* Effect.all(
        Array.from({ length: 200 }, (_, i) =>
          get(i % 2 === 0 ? "/api/v1/usage" : "/api/v1/surveys/srv_q/responses", QUOTA_TOKENS.crowd)),
        { concurrency: "unbounded" }
      )
      expect(answers.filter((a) => a.status === 200)).toHaveLength(50)
      expect(answers.filter((a) => a.status === 429)).toHaveLength(150)
      const remaining = answers.filter((a) => a.status === 200).map((a) => Number(a.headers["ratelimit-remaining"]))
      expect(remaining.sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i))
      yield* advance("1 minute")
      const usage = yield* get("/api/v1/usage", QUOTA_TOKENS.crowd)
      expect(usageOf(usage).usedToday).toBe(51)
    }))
})

const dir = mkdtempSync(join(tmpdir(), "quota-busy-"))
const file = join(dir, "survey.db")

// SQLite only: another connection holding the quota file's one write lock past the busy timeout.
// PostgreSQL locks rows, not the database, and a lost PostgreSQL is tested in test/DatabaseLost.test.ts.
describe.skipIf(testDatabase === "postgres")("on SQLite the counts live in a file of their own", () => {
  layer(
    Layer.merge(
      TestServer(quotaFixture, { databasePath: file, sqliteBusyTimeoutMs: 100 }),
      Layer.scopedDiscard(Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))))
    )
  )((it) => {
    const storedIn = (path: string) => {
      const reader = new Database(path, { readonly: true })
      try {
        return reader.query("SELECT COALESCE(SUM(count), 0) AS n FROM usage_daily").get()
      } finally {
        reader.close()
      }
    }
    const stored = () => storedIn(quotaFilePath(file))
    /** The number SQLite moves whenever another connection commits to the main file. */
    const mainVersion = (watcher: Database) => watcher.query("PRAGMA data_version").get()

    it.effect("the responses list and /usage answer 503 while another connection holds the quota file's write lock; a retry succeeds", () =>
      Effect.gen(function*() {
        const before = yield* get("/api/v1/usage", QUOTA_TOKENS.colleague)
        expect(usageOf(before).usedToday).toBe(1)
        // Counted requests are stored before they are answered, in the quota file and not in the main file.
        expect(stored()).toEqual({ n: 1 })
        expect(storedIn(file)).toEqual({ n: 0 })

        const holder = new Database(quotaFilePath(file))
        holder.exec("BEGIN IMMEDIATE")
        holder.exec("INSERT INTO usage_daily (account_id, day, count) VALUES ('acc_lock', '2000-01-01', 1)")
        try {
          // The count cannot be stored past the busy timeout (and its retries): nothing is admitted.
          const list = yield* get("/api/v1/surveys/srv_q/responses", QUOTA_TOKENS.colleague)
          expect(list.status).toBe(503)
          expect(list.body).toEqual({ code: "service_unavailable", message: expect.any(String) })
          const usage = yield* get("/api/v1/usage", QUOTA_TOKENS.colleague)
          expect(usage.status).toBe(503)
          expect(usage.body).toMatchObject({ code: "service_unavailable" })
          expect(stored()).toEqual({ n: 1 })
        } finally {
          holder.exec("ROLLBACK")
          holder.close()
        }

        const list = yield* get("/api/v1/surveys/srv_q/responses", QUOTA_TOKENS.colleague)
        expect(list.status).toBe(200)
        expect(bodyOf(ResponseIds, list).data.map((r) => r.id)).toEqual(["rsp_q"])
        const retry = yield* get("/api/v1/usage", QUOTA_TOKENS.colleague)
        expect(retry.status).toBe(200)
        // The 503s counted nowhere: 1 before, the list after the lock and this call.
        expect(usageOf(retry).usedToday).toBe(3)
        expect(stored()).toEqual({ n: 3 })
      }))

    it.effect("counting a request neither needs the main file's write lock nor commits to the main file", () =>
      Effect.gen(function*() {
        const start = usageOf(yield* get("/api/v1/usage", QUOTA_TOKENS.crowd)).usedToday
        const watcher = new Database(file, { readonly: true })
        const holder = new Database(file)
        try {
          const version = mainVersion(watcher)
          // Another connection holds the main file's write lock meanwhile: reads and their counts go on.
          holder.exec("BEGIN IMMEDIATE")
          try {
            for (let i = 0; i < 3; i++) {
              const list = yield* get("/api/v1/surveys/srv_q/responses", QUOTA_TOKENS.crowd)
              expect(list.status).toBe(200)
            }
          } finally {
            holder.exec("ROLLBACK")
          }
          const usage = yield* get("/api/v1/usage", QUOTA_TOKENS.crowd)
          expect(usageOf(usage).usedToday).toBe(start + 4)
          // Nothing was committed to the main file by the four counted requests.
          expect(mainVersion(watcher)).toEqual(version)
        } finally {
          holder.close()
          watcher.close()
        }
      }))
  })
})
