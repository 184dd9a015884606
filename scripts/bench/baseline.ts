/**
 * The raw baseline of the read benchmark: plain `Bun.serve` + `bun:sqlite`, no Effect.
 *
 * It does the per-request work the service does, honestly, so that the ratio measures the
 * framework and not a shortcut: SHA-256 of the bearer token and the key lookup with the creator's
 * membership and the owner's plan, the survey access rules of decisions §3, the same queries, the
 * same JSON bytes and the same headers (including `x-request-id`).
 *
 * Quota: the same per-account counting as the service (see `countRequest`).
 *
 * Responses: the best layout found for the same bytes, which the service uses too (migration 0009):
 * one range read of the clustered responses table, each row with its stored rendering of
 * `answers`, the page written out in one pass from value rows.
 *
 * Usage: bun scripts/bench/baseline.ts --port 8081 --db path/to/survey.db
 */
import { Database, type Statement } from "bun:sqlite"
import { existsSync } from "node:fs"
import { parseArgs } from "node:util"
import { analyticsSnapshotSql } from "../../src/Analytics/SnapshotSql.js"
import { accessGenerationSql, keyLookupSql } from "../../src/Auth/KeyLookupSql.js"
import { hashToken } from "../../src/Auth/Token.js"
import { randomBase62 } from "../../src/Domain/Ids.js"
import { AccountUsage } from "../../src/Quota/AccountUsage.js"
import { utcDay, utcMonth } from "../../src/Quota/Calendar.js"
import { addBurstSql, addDailySql, openQuotaFile, quotaFilePath } from "../../src/Quota/QuotaFileSql.js"
import {
  analyticsJson,
  Answered,
  answersOf,
  type AnswerRow,
  bearerToken,
  busy,
  decide,
  error,
  json,
  type Key,
  keyOf,
  type KeyRow,
  limited,
  type Lookup,
  type PageRow,
  pageOfResponses,
  pageOfSurveys,
  type Plan,
  questionJson,
  type QuestionRow,
  rateLimitHeaders,
  requestIdPattern,
  responseColumns,
  type ResponseRow,
  responsesJson,
  responsesQuery,
  staleRows,
  surveyColumns,
  surveyEtag,
  surveyJson,
  type SurveyRow,
  surveysQuery,
  usageJson,
  visibleSurvey,
  windowMsOf
} from "./BaselineWire.js"

const { values: args } = parseArgs({
  options: { port: { type: "string", default: "8081" }, db: { type: "string" } },
  strict: true
})
if (args.db === undefined) throw new Error("--db is required")

const db = new Database(args.db, { readwrite: true, create: false })
db.exec("PRAGMA journal_mode = WAL")
db.exec("PRAGMA synchronous = NORMAL")
db.exec("PRAGMA busy_timeout = 5000")

const keyByHash = db.query<KeyRow, [string]>(keyLookupSql)
const surveyById = db.query<SurveyRow, [string]>(`SELECT ${surveyColumns} FROM surveys WHERE id = ?`)
const questionsOf = db.query<QuestionRow, [string]>(
  `SELECT id, type, label, required, allow_multiple, position, options
   FROM questions WHERE survey_id = ? AND deleted = 0 AND type <> 'section'
   ORDER BY position, id`
)

/** Statements prepared once per shape; `bun:sqlite` caches `query()` by text as well. */
const prepared = new Map<string, Statement>()
const statement = <Row>(text: string) => {
  let found = prepared.get(text)
  if (found === undefined) {
    found = db.prepare(text)
    prepared.set(text, found)
  }
  return found as Statement<Row, Array<string | number>>
}
// Known keys remembered with the access generation they were read at, as the service does
// (src/Auth/ApiKeyRepo.ts): the generation is read on every request, the lookup only after a change.
const accessGeneration = db.query<{ value: number }, []>(accessGenerationSql)
const remembered = new Map<string, { readonly generation: number; readonly found: Lookup }>()

const lookupKey = (tokenHash: string): Lookup => {
  const generation = accessGeneration.get()?.value ?? 0
  const known = remembered.get(tokenHash)
  if (known !== undefined && known.generation === generation) return known.found
  const found = decide(keyByHash.get(tokenHash))
  if (found._tag !== "Unknown") {
    if (remembered.size >= 10_000) remembered.clear()
    remembered.set(tokenHash, { generation, found })
  }
  return found
}

const authenticate = (request: Request, requestId: string): Key =>
  keyOf(lookupKey(hashToken(bearerToken(request, requestId))), requestId)

// --- Quota: the service's limiter (src/Quota/RateLimiter.ts) without Effect --------------------
//
// Per creator account, counters in memory (the same `AccountUsage` class: sliding burst window,
// UTC day and month), each account loaded once from the usage tables; counted requests written
// behind every 500 ms in one transaction with the same SQL, so a crash loses at most that much.
// While a write fails, requests answer 503 and count nowhere, as in the service.
// The usage tables are in the quota file beside the database file, as the service keeps them
// (src/Quota/QuotaFileSql.ts): a write there leaves the page cache of the connection that reads the
// responses alone. `survey-service migrate` creates it; the benchmark runs that first.

if (!existsSync(quotaFilePath(args.db))) throw new Error(`${quotaFilePath(args.db)} is missing: run survey-service migrate first`)
const quota = openQuotaFile(args.db, 5000).db

const FLUSH_EVERY_MS = 500
const PRUNE_EVERY_MS = 10_000

const dayCountOf = quota.query<{ count: number }, [string, string]>(
  "SELECT count FROM usage_daily WHERE account_id = ? AND day = ?"
)
const monthCountOf = quota.query<{ count: number }, [string, string, string]>(
  "SELECT COALESCE(SUM(count), 0) AS count FROM usage_daily WHERE account_id = ? AND day >= ? AND day <= ?"
)
const burstRowsOf = quota.query<{ at_ms: number; count: number }, [string, number]>(
  "SELECT at_ms, count FROM usage_burst WHERE account_id = ? AND at_ms > ? ORDER BY at_ms"
)
const addDay = quota.query<unknown, [string, string, number]>(addDailySql)
const addStamp = quota.query<unknown, [string, number, number]>(addBurstSql)
const pruneBurst = quota.query<unknown, [string, number]>("DELETE FROM usage_burst WHERE account_id = ? AND at_ms <= ?")

const accounts = new Map<string, AccountUsage>()
let unwritten: Array<{ accountId: string; at: number; windowMs: number }> = []
let behind = false
const lastPruned = new Map<string, number>()

const accountOf = (accountId: string, plan: Plan) => {
  const ready = accounts.get(accountId)
  if (ready !== undefined) return ready
  const now = Date.now()
  const month = utcMonth(now)
  const burst: Array<number> = []
  for (const row of burstRowsOf.all(accountId, now - windowMsOf(plan))) {
    for (let i = 0; i < row.count; i++) burst.push(row.at_ms)
  }
  const usage = new AccountUsage({
    dayCount: dayCountOf.get(accountId, utcDay(now))?.count ?? 0,
    monthCount: monthCountOf.get(accountId, `${month}-01`, `${month}-31`)?.count ?? 0,
    burst
  }, now)
  accounts.set(accountId, usage)
  return usage
}

const record = quota.transaction((batch: ReadonlyArray<{ accountId: string; at: number; windowMs: number }>, now: number) => {
  const days = new Map<string, { accountId: string; day: string; count: number }>()
  const stamps = new Map<string, { accountId: string; at: number; count: number }>()
  const windows = new Map<string, number>()
  for (const item of batch) {
    const day = utcDay(item.at)
    const dayRow = days.get(`${item.accountId}\u0000${day}`)
    if (dayRow === undefined) days.set(`${item.accountId}\u0000${day}`, { accountId: item.accountId, day, count: 1 })
    else dayRow.count += 1
    const stampRow = stamps.get(`${item.accountId}\u0000${item.at}`)
    if (stampRow === undefined) stamps.set(`${item.accountId}\u0000${item.at}`, { accountId: item.accountId, at: item.at, count: 1 })
    else stampRow.count += 1
    windows.set(item.accountId, item.windowMs)
  }
  for (const d of days.values()) addDay.run(d.accountId, d.day, d.count)
  for (const t of stamps.values()) addStamp.run(t.accountId, t.at, t.count)
  const pruned: Array<string> = []
  for (const [accountId, windowMs] of windows) {
    if ((lastPruned.get(accountId) ?? Number.NEGATIVE_INFINITY) + PRUNE_EVERY_MS <= now) {
      pruneBurst.run(accountId, now - windowMs)
      pruned.push(accountId)
    }
  }
  return pruned
})

const flush = () => {
  if (unwritten.length === 0) return
  const batch = unwritten
  unwritten = []
  const now = Date.now()
  try {
    for (const accountId of record(batch, now)) lastPruned.set(accountId, now)
    behind = false
  } catch (e) {
    console.error("request counts not written yet; retrying", e)
    unwritten = batch.concat(unwritten)
    behind = true
  }
}
setInterval(flush, FLUSH_EVERY_MS)
process.on("SIGTERM", () => {
  flush()
  process.exit(0)
})

/**
 * Counts the request against its key creator's quota, exactly where the service's limiter
 * counts (after the plan gate, before the handler): 429 with Retry-After when a limit is
 * reached, 503 while counts cannot be written; otherwise the RateLimit-* headers to send.
 */
const countRequest = (key: Key, requestId: string): Record<string, string> => {
  if (behind) throw busy(requestId)
  const now = Date.now()
  const decision = accountOf(key.accountId, key.plan).take(now, key.plan)
  if (decision._tag === "Limited") throw limited(decision.headers, decision.retryAfterSeconds, requestId)
  unwritten.push({ accountId: key.accountId, at: now, windowMs: windowMsOf(key.plan) })
  return rateLimitHeaders(decision.headers)
}

/** GET /usage (api-v1 §2.9), from the same counters. */
const usage = (key: Key) => {
  const now = Date.now()
  return usageJson(key.plan, accountOf(key.accountId, key.plan).current(now, key.plan).today, now)
}

const requireSurvey = (key: Key, surveyId: string, requestId: string): SurveyRow =>
  visibleSurvey(key, surveyId, surveyById.get(surveyId), requestId)

const listSurveys = (key: Key, params: URLSearchParams, requestId: string) => {
  const { fingerprint, limit, query } = surveysQuery(key, params, requestId)
  const rows = query === null ? [] : statement<SurveyRow>(query.text).all(...query.params)
  return pageOfSurveys(rows, limit, fingerprint)
}

const listQuestions = (surveyId: string) => `{"data":[${questionsOf.all(surveyId).map(questionJson).join(",")}]}`

const answersJson = (surveyId: string, rows: ReadonlyArray<ResponseRow>): Array<string> =>
  rows.length === 0 ? [] : responsesJson(rows, statement<AnswerRow>(answersOf(rows.length)).all(surveyId, ...rows.map((r) => r.id)))

const listResponses = (surveyId: string, params: URLSearchParams, requestId: string) => {
  const { fingerprint, limit, query } = responsesQuery(surveyId, params, requestId)
  const rows = statement<PageRow>(query.text).values(...query.params) as Array<PageRow>
  // Responses whose rendering is stale (a question changed since) are assembled from answer rows.
  const missing = staleRows(rows, limit)
  const texts = answersJson(surveyId, missing)
  return pageOfResponses(rows, limit, fingerprint, new Map(missing.map((r, i) => [r.id, texts[i] ?? ""])))
}

/** The survey's questions and its five counter tables in one statement, as the service reads them. */
const analyticsSnapshot = db.query<Array<string | number | null>, [string]>(analyticsSnapshotSql)

const responseById = db.query<ResponseRow, [string, string]>(
  `SELECT ${responseColumns} FROM responses WHERE id = ? AND survey_id = ?`
)

const route = (request: Request, url: URL, requestId: string): Response => {
  const path = url.pathname
  if (path === "/healthz" && request.method === "GET") return json(200, `{"status":"ok"}`, requestId)
  if (path === "/api/v1/usage" && request.method === "GET") {
    const key = authenticate(request, requestId)
    const headers = countRequest(key, requestId)
    return json(200, usage(key), requestId, headers)
  }
  const parts = path.startsWith("/api/v1/surveys") ? path.slice("/api/v1/".length).split("/") : []
  if (request.method !== "GET" || parts.length === 0 || parts.length > 4 || parts.some((p) => p === "")) {
    return error(404, "not_found", `No route for ${request.method} ${path}.`, requestId)
  }
  const key = authenticate(request, requestId)
  const headers = countRequest(key, requestId)
  const ok = (body: string, extra: Record<string, string> = {}) => json(200, body, requestId, { ...headers, ...extra })
  const surveyId = parts[1] === undefined ? undefined : decodeURIComponent(parts[1])
  if (surveyId === undefined) return ok(listSurveys(key, url.searchParams, requestId))
  const survey = requireSurvey(key, surveyId, requestId)
  if (parts.length === 2) return ok(surveyJson(survey), surveyEtag(survey))
  if (parts[2] === "questions" && parts.length === 3) return ok(listQuestions(surveyId), surveyEtag(survey))
  if (parts[2] === "analytics" && parts.length === 3) return ok(analyticsJson(analyticsSnapshot.values(surveyId)))
  if (parts[2] === "responses" && parts.length === 3) return ok(listResponses(surveyId, url.searchParams, requestId))
  if (parts[2] === "responses" && parts[3] !== undefined) {
    const row = responseById.get(decodeURIComponent(parts[3]), surveyId)
    if (row === null) return error(404, "not_found", "No response with that id in this survey.", requestId, headers)
    return ok(answersJson(surveyId, [row])[0] ?? "")
  }
  return error(404, "not_found", `No route for ${request.method} ${path}.`, requestId)
}

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: Number(args.port),
  fetch(request) {
    const incoming = request.headers.get("x-request-id")
    const requestId = incoming !== null && requestIdPattern.test(incoming) ? incoming : `req_${randomBase62(16)}`
    try {
      return route(request, new URL(request.url), requestId)
    } catch (e) {
      if (e instanceof Answered) return e.response
      console.error(e)
      return error(500, "internal_error", "The service failed to answer this request; it has been logged.", requestId)
    }
  }
})
console.log(`baseline listening on http://127.0.0.1:${server.port}`)
