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
import { AccountUsage, type RateLimitHeaders } from "../../src/Quota/AccountUsage.js"
import { medianOf } from "../../src/Analytics/Median.js"
import { nextUtcMidnight, utcDay, utcMonth } from "../../src/Quota/Calendar.js"
import { addBurstSql, addDailySql, openQuotaFile, quotaFilePath } from "../../src/Quota/QuotaFileSql.js"

interface Key {
  readonly id: string
  readonly workspaceId: string
  readonly accountId: string
  readonly surveyIds: ReadonlySet<string> | null
  readonly plan: Plan
}

interface Plan {
  readonly planId: string
  readonly burstLimit: number
  readonly burstWindowMinutes: number
  readonly dailyLimit: number
  readonly monthlyLimit: number
}

const { values: args } = parseArgs({
  options: { port: { type: "string", default: "8081" }, db: { type: "string" } },
  strict: true
})
if (args.db === undefined) throw new Error("--db is required")

const db = new Database(args.db, { readwrite: true, create: false })
db.exec("PRAGMA journal_mode = WAL")
db.exec("PRAGMA synchronous = NORMAL")
db.exec("PRAGMA busy_timeout = 5000")

interface KeyRow {
  id: string
  workspace_id: string
  created_by: string
  survey_ids: string | null
  role: string | null
  api_access: number
  plan_id: string
  burst_limit: number
  burst_window_minutes: number
  daily_limit: number
  monthly_limit: number
}
const keyByHash = db.query<KeyRow, [string]>(keyLookupSql)

interface SurveyRow {
  id: string
  workspace_id: string
  title: string
  description: string | null
  status: string
  trashed: number
  question_count: number
  response_count: number
  created_at: string
  updated_at: string
}
const surveyColumns =
  "id, workspace_id, title, description, status, trashed, question_count, response_count, created_at, updated_at"
const surveyById = db.query<SurveyRow, [string]>(`SELECT ${surveyColumns} FROM surveys WHERE id = ?`)

const questionsOf = db.query<{
  id: string
  type: string
  label: string
  required: number
  allow_multiple: number
  position: number
  options: string
}, [string]>(
  `SELECT id, survey_id, type, label, required, allow_multiple, position, options, settings, deleted
   FROM questions WHERE survey_id = ? AND deleted = 0
   ORDER BY position, id`
)

interface ResponseRow {
  id: string
  survey_id: string
  external_user_id: string | null
  completed_at: string | null
  created_at: string
  updated_at: string
}
interface AnswerRow {
  response_id: string
  question_id: string
  value: string
  values: string
  type: string | null
  position: number | null
}

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

const json = (status: number, body: string, requestId: string, extra: Record<string, string> = {}) =>
  new Response(body, {
    status,
    headers: { "Content-Type": "application/json", "x-request-id": requestId, ...extra }
  })

const error = (status: number, code: string, message: string, requestId: string, extra?: Record<string, string>) =>
  json(status, JSON.stringify({ code, message }), requestId, extra)

class Answered extends Error {
  constructor(readonly response: Response) {
    super("answered")
  }
}

const requestIdPattern = /^[A-Za-z0-9._-]{8,128}$/
const tokenShape = /^[A-Za-z0-9_\-]{8,200}$/

type Lookup =
  | { readonly _tag: "Unknown" }
  | { readonly _tag: "NotMember" }
  | { readonly _tag: "NoApiAccess" }
  | { readonly _tag: "Valid"; readonly key: Key }

const decide = (row: KeyRow | null): Lookup => {
  if (row === null) return { _tag: "Unknown" }
  if (row.role === null) return { _tag: "NotMember" }
  if (row.api_access === 0) return { _tag: "NoApiAccess" }
  const ids: unknown = row.survey_ids === null ? null : JSON.parse(row.survey_ids)
  return {
    _tag: "Valid",
    key: {
      id: row.id,
      workspaceId: row.workspace_id,
      accountId: row.created_by,
      surveyIds: Array.isArray(ids) ? new Set(ids.map(String)) : null,
      plan: {
        planId: row.plan_id,
        burstLimit: row.burst_limit,
        burstWindowMinutes: row.burst_window_minutes,
        dailyLimit: row.daily_limit,
        monthlyLimit: row.monthly_limit
      }
    }
  }
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

const authenticate = (request: Request, requestId: string): Key => {
  const raw = (request.headers.get("authorization") ?? "").slice("Bearer ".length).trim()
  const unauthorized = (message: string) => new Answered(error(401, "unauthorized", message, requestId))
  if (!tokenShape.test(raw)) throw unauthorized("Send an API key as `Authorization: Bearer <API_KEY>`.")
  const found = lookupKey(hashToken(raw))
  switch (found._tag) {
    case "Unknown":
      throw unauthorized("The API key is not valid or has been revoked.")
    case "NotMember":
      throw unauthorized("The API key's creator no longer has access to the workspace.")
    case "NoApiAccess":
      throw new Answered(
        error(403, "plan_upgrade_required", "The workspace owner's plan does not include API access.", requestId)
      )
    case "Valid":
      return found.key
  }
}

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
const windowMsOf = (plan: Plan) => plan.burstWindowMinutes * 60_000

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

const rateLimitHeaders = (h: RateLimitHeaders): Record<string, string> => ({
  "ratelimit-limit": String(h.limit),
  "ratelimit-remaining": String(h.remaining),
  "ratelimit-reset": String(h.resetSeconds)
})

/**
 * Counts the request against its key creator's quota, exactly where the service's limiter
 * counts (after the plan gate, before the handler): 429 with Retry-After when a limit is
 * reached, 503 while counts cannot be written; otherwise the RateLimit-* headers to send.
 */
const countRequest = (key: Key, requestId: string): Record<string, string> => {
  if (behind) {
    throw new Answered(
      error(503, "service_unavailable", "The service is busy; nothing changed and the request may be retried.", requestId)
    )
  }
  const now = Date.now()
  const decision = accountOf(key.accountId, key.plan).take(now, key.plan)
  if (decision._tag === "Limited") {
    throw new Answered(
      error(
        429,
        "rate_limited",
        `Request quota exhausted; retry in ${decision.retryAfterSeconds} s.`,
        requestId,
        { ...rateLimitHeaders(decision.headers), "retry-after": String(decision.retryAfterSeconds) }
      )
    )
  }
  unwritten.push({ accountId: key.accountId, at: now, windowMs: windowMsOf(key.plan) })
  return rateLimitHeaders(decision.headers)
}

/** GET /usage (api-v1 §2.9), from the same counters. */
const usageJson = (key: Key) => {
  const now = Date.now()
  const plan = key.plan
  const account = accountOf(key.accountId, plan)
  const counts = account.current(now, plan)
  return `{"burstLimit":${plan.burstLimit},"burstWindowMinutes":${plan.burstWindowMinutes},"dailyLimit":${plan.dailyLimit},"usedToday":${counts.today},"remainingToday":${
    Math.max(0, plan.dailyLimit - counts.today)
  },"monthlyLimit":${plan.monthlyLimit},"resetAt":${JSON.stringify(new Date(nextUtcMidnight(now)).toISOString())}}`
}

const requireSurvey = (key: Key, surveyId: string, requestId: string): SurveyRow => {
  const row = surveyById.get(surveyId)
  if (row === null || row.workspace_id !== key.workspaceId || row.trashed !== 0) {
    throw new Answered(
      error(404, "not_found", `No survey with id ${JSON.stringify(surveyId.slice(0, 64))}.`, requestId)
    )
  }
  if (key.surveyIds !== null && !key.surveyIds.has(surveyId)) {
    throw new Answered(error(403, "forbidden", "This API key is limited to other surveys.", requestId))
  }
  return row
}

const surveyJson = (r: SurveyRow) =>
  `{"id":${JSON.stringify(r.id)},"title":${JSON.stringify(r.title)},"description":${
    JSON.stringify(r.description)
  },"status":${JSON.stringify(r.status)},"published":${r.status === "published"},"questionCount":${r.question_count},"responseCount":${r.response_count},"createdAt":${
    JSON.stringify(r.created_at)
  },"updatedAt":${JSON.stringify(r.updated_at)}}`

const invalid = (requestId: string, path: string, message: string) =>
  new Answered(json(
    400,
    JSON.stringify({ code: "invalid_request", message: `Invalid \`${path}\`: ${message}`, issues: [{ path, message }] }),
    requestId
  ))

const limitOf = (params: URLSearchParams, requestId: string) => {
  const raw = params.get("limit")
  if (raw === null) return 25
  const n = Number(raw)
  if (raw.trim() === "" || !Number.isInteger(n) || n < 1 || n > 100) {
    throw invalid(requestId, "limit", "limit must be a whole number from 1 to 100")
  }
  return n
}

const encodeCursor = (key: string, id: string, fingerprint: string) =>
  Buffer.from(JSON.stringify({ k: key, i: id, f: fingerprint })).toString("base64url")

const decodeCursor = (params: URLSearchParams, fingerprint: string, requestId: string) => {
  const raw = params.get("cursor")
  if (raw === null) return null
  const refuse = () =>
    new Answered(json(
      400,
      JSON.stringify({
        code: "invalid_request",
        message: "The cursor is not valid for this list; use a nextCursor from the same request.",
        issues: [{ path: "cursor", message: "not a cursor issued for this list and filter" }]
      }),
      requestId
    ))
  if (!/^[A-Za-z0-9_-]{1,2048}$/.test(raw)) throw refuse()
  let parsed: unknown
  try {
    parsed = JSON.parse(Buffer.from(raw, "base64url").toString("utf8"))
  } catch {
    throw refuse()
  }
  if (
    typeof parsed !== "object" || parsed === null || !("k" in parsed) || !("i" in parsed) || !("f" in parsed) ||
    typeof parsed.k !== "string" || typeof parsed.i !== "string" || parsed.f !== fingerprint
  ) throw refuse()
  return { key: parsed.k, id: parsed.i }
}

const isoWithOffset = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/i

const listSurveys = (key: Key, params: URLSearchParams, requestId: string) => {
  const limit = limitOf(params, requestId)
  const fingerprint = `surveys:${key.workspaceId}`
  const after = decodeCursor(params, fingerprint, requestId)
  const ids = key.surveyIds === null ? null : [...key.surveyIds]
  let rows: Array<SurveyRow> = []
  if (ids === null || ids.length > 0) {
    const text = `SELECT ${surveyColumns} FROM surveys WHERE workspace_id = ? AND trashed = 0` +
      (ids === null ? "" : ` AND id IN (${ids.map(() => "?").join(", ")})`) +
      (after === null ? "" : " AND (updated_at, id) < (?, ?)") +
      " ORDER BY updated_at DESC, id DESC LIMIT ?"
    rows = statement<SurveyRow>(text).all(
      key.workspaceId,
      ...(ids ?? []),
      ...(after === null ? [] : [after.key, after.id]),
      limit + 1
    )
  }
  const page = rows.slice(0, limit)
  const last = page[page.length - 1]
  const next = rows.length > limit && last !== undefined ? encodeCursor(last.updated_at, last.id, fingerprint) : null
  return `{"data":[${page.map(surveyJson).join(",")}],"nextCursor":${JSON.stringify(next)}}`
}

const listQuestions = (surveyId: string) => {
  const out: Array<string> = []
  for (const q of questionsOf.all(surveyId)) {
    if (q.type === "section") continue
    const options = (JSON.parse(q.options) as Array<{ value: string; label: string }>)
      .map((o) => `{"value":${JSON.stringify(o.value)},"label":${JSON.stringify(o.label)}}`)
    out.push(
      `{"id":${JSON.stringify(q.id)},"type":${JSON.stringify(q.type)},"label":${
        JSON.stringify(q.label)
      },"required":${q.required !== 0},"allowMultiple":${q.allow_multiple !== 0},"order":${q.position},"options":[${
        options.join(",")
      }]}`
    )
  }
  return `{"data":[${out.join(",")}]}`
}

const rank = (a: AnswerRow) =>
  a.type === null || a.type === "section" ? Number.POSITIVE_INFINITY : a.position ?? 0

const responsesJson = (surveyId: string, rows: ReadonlyArray<ResponseRow>): Array<string> => {
  if (rows.length === 0) return []
  const answers = statement<AnswerRow>(
    `SELECT a.response_id, a.question_id, a.value, a."values",
            CASE WHEN q.deleted = 0 THEN q.type END AS type, q.position
     FROM answers a
     LEFT JOIN questions q ON q.id = a.question_id AND q.survey_id = ?
     WHERE a.response_id IN (${rows.map(() => "?").join(", ")})`
  ).all(surveyId, ...rows.map((r) => r.id))
  const byResponse = new Map<string, Array<AnswerRow>>()
  for (const a of answers) {
    const list = byResponse.get(a.response_id)
    if (list === undefined) byResponse.set(a.response_id, [a])
    else list.push(a)
  }
  return rows.map((r) => {
    const own = (byResponse.get(r.id) ?? []).sort((a, b) =>
      rank(a) - rank(b) || (a.question_id < b.question_id ? -1 : a.question_id > b.question_id ? 1 : 0)
    )
    const answerJson = own.map((a) => {
      const live = a.type !== null && a.type !== "section"
      return `{"fieldId":${live ? JSON.stringify(a.question_id) : "null"},"type":${
        live ? JSON.stringify(a.type) : "null"
      },"value":${JSON.stringify(a.value)},"values":${JSON.stringify(JSON.parse(a.values))}}`
    })
    return `{"id":${JSON.stringify(r.id)},"surveyId":${JSON.stringify(r.survey_id)},"externalUserId":${
      JSON.stringify(r.external_user_id)
    },"completed":${r.completed_at !== null},"completedAt":${JSON.stringify(r.completed_at)},"createdAt":${
      JSON.stringify(r.created_at)
    },"updatedAt":${JSON.stringify(r.updated_at)},"answers":[${answerJson.join(",")}]}`
  })
}

const responseColumns = "id, survey_id, external_user_id, completed_at, created_at, updated_at"

/** A row of the responses page: the response's columns, then its rendering of `answers` or null. */
type PageRow = [string, string, string | null, string | null, string, string, string | null]

const listResponses = (surveyId: string, params: URLSearchParams, requestId: string) => {
  const limit = limitOf(params, requestId)
  const status = params.get("status") ?? "all"
  if (status !== "all" && status !== "completed" && status !== "incomplete") {
    throw invalid(requestId, "status", `Expected "all" | "completed" | "incomplete", actual ${JSON.stringify(status)}`)
  }
  const createdAfterRaw = params.get("createdAfter")
  let createdAfter: string | null = null
  if (createdAfterRaw !== null) {
    const millis = isoWithOffset.test(createdAfterRaw) ? Date.parse(createdAfterRaw) : Number.NaN
    if (!Number.isFinite(millis)) {
      throw invalid(requestId, "createdAfter", "expected an ISO 8601 timestamp with an offset, like 2026-01-31T12:00:00Z")
    }
    createdAfter = new Date(millis).toISOString()
  }
  const fingerprint = `responses:${surveyId}:${status}:${createdAfter ?? ""}`
  const after = decodeCursor(params, fingerprint, requestId)
  // The layout of migration 0009: one range read of the responses table (clustered by
  // survey_id, created_at, id), each row with its stored rendering of `answers` when that is
  // current for the survey's questions; value rows, and the page written out in one pass.
  const text = `SELECT id, survey_id, external_user_id, completed_at, created_at, updated_at,
      CASE WHEN answers_layout = (SELECT answer_layout FROM surveys WHERE id = ?) THEN answers_json END
    FROM responses WHERE survey_id = ?` +
    (status === "all" ? "" : " AND completed = ?") +
    (createdAfter === null ? "" : " AND created_at >= ?") +
    (after === null ? "" : " AND (created_at, id) > (?, ?)") +
    " ORDER BY created_at, id LIMIT ?"
  const rows = statement<PageRow>(text).values(
    surveyId,
    surveyId,
    ...(status === "all" ? [] : [status === "completed" ? 1 : 0]),
    ...(createdAfter === null ? [] : [createdAfter]),
    ...(after === null ? [] : [after.key, after.id]),
    limit + 1
  ) as Array<PageRow>
  const count = Math.min(limit, rows.length)
  // Responses whose rendering is stale (a question changed since) are assembled from answer rows.
  let stale: Map<string, string> | undefined
  for (let i = 0; i < count; i++) {
    const r = rows[i]!
    if (r[6] === null) (stale ??= new Map()).set(r[0], "")
  }
  if (stale !== undefined) {
    const missing = rows.slice(0, count).filter((r) => r[6] === null).map((r): ResponseRow => ({
      id: r[0],
      survey_id: r[1],
      external_user_id: r[2],
      completed_at: r[3],
      created_at: r[4],
      updated_at: r[5]
    }))
    const texts = responsesJson(surveyId, missing)
    missing.forEach((r, i) => stale!.set(r.id, texts[i] ?? ""))
  }
  let body = `{"data":[`
  for (let i = 0; i < count; i++) {
    const r = rows[i]!
    if (i > 0) body += ","
    body += r[6] === null
      ? stale!.get(r[0])
      : `{"id":${JSON.stringify(r[0])},"surveyId":${JSON.stringify(r[1])},"externalUserId":${
        r[2] === null ? "null" : JSON.stringify(r[2])
      },"completed":${r[3] !== null},"completedAt":${r[3] === null ? "null" : JSON.stringify(r[3])},"createdAt":${
        JSON.stringify(r[4])
      },"updatedAt":${JSON.stringify(r[5])},"answers":${r[6]}}`
  }
  const last = rows[count - 1]
  const next = rows.length > limit && last !== undefined ? encodeCursor(last[4], last[0], fingerprint) : null
  return `${body}],"nextCursor":${JSON.stringify(next)}}`
}

// --- Analytics: the stored aggregate tables (src/Analytics/*) read in one transaction ---------

interface StoredQuestion {
  id: string
  type: string
  position: number
  deleted: number
  options: string
}
/** The survey's questions and its five counter tables in one statement, as the service reads them. */
const analyticsSnapshot = db.query<Array<string | number | null>, [string]>(analyticsSnapshotSql)

const analyticsJson = (surveyId: string) => {
  const questionRows: Array<StoredQuestion> = []
  let responseCount = 0
  let completedCount = 0
  const counters = new Map<string, {
    answered: number
    text_count: number
    numeric_count: number
    numeric_sum: number
    numeric_sum_squares: number
  }>()
  const options = new Map<string, Map<string, { count: number; rankSum: number }>>()
  const numbers = new Map<string, Map<number, number>>()
  const reach = new Map<number, number>()
  for (const row of analyticsSnapshot.values(surveyId) as Array<[number, string, string, number, number, number, number, number, string]>) {
    const [kind, questionId, value, a, b, c, d, e, f] = row
    if (kind === 5) {
      // id, type, position, deleted, options
      questionRows.push({ id: questionId, type: value, position: a, deleted: b, options: f })
    } else if (kind === 0) {
      responseCount = a
      completedCount = b
    } else if (kind === 1) {
      reach.set(a, b)
    } else if (kind === 2) {
      counters.set(questionId, { answered: a, text_count: b, numeric_count: c, numeric_sum: d, numeric_sum_squares: e })
    } else if (kind === 3) {
      const map = options.get(questionId) ?? new Map<string, { count: number; rankSum: number }>()
      map.set(value, { count: a, rankSum: b })
      options.set(questionId, map)
    } else {
      const map = numbers.get(questionId) ?? new Map<number, number>()
      map.set(a, b)
      numbers.set(questionId, map)
    }
  }
  const reachAtOrAfter = (position: number) => {
    let reached = completedCount
    for (const [at, count] of reach) if (at >= position) reached += count
    return reached
  }
  const shown = questionRows
    .filter((q) => q.deleted === 0 && q.type !== "section")
    .sort((a, b) => a.position - b.position || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  const questions = shown.map((q) => {
    const c = counters.get(q.id)
    const answered = c?.answered ?? 0
    const own = options.get(q.id)
    const countOf = (value: string) => own?.get(value) ?? { count: 0, rankSum: 0 }
    const choices = JSON.parse(q.options) as Array<{ value: string; label: string }>
    const withOptions = q.type === "checkbox" || q.type === "scale" || q.type === "sort"
    let numeric = "null"
    if (q.type === "number" || q.type === "scale") {
      const count = c?.numeric_count ?? 0
      const sum = c?.numeric_sum ?? 0
      const sumSquares = c?.numeric_sum_squares ?? 0
      const sorted = [...(numbers.get(q.id) ?? new Map<number, number>())].filter(([, n]) => n > 0)
        .sort((a, b) => a[0] - b[0])
      const variance = count >= 2 ? Math.max(0, (sumSquares - (sum * sum) / count) / (count - 1)) : null
      numeric = `{"count":${count},"mean":${count > 0 ? sum / count : 0},"median":${
        JSON.stringify(medianOf(sorted, count))
      },"min":${JSON.stringify(count > 0 ? sorted[0]?.[0] ?? null : null)},"max":${
        JSON.stringify(count > 0 ? sorted[sorted.length - 1]?.[0] ?? null : null)
      },"standardDeviation":${JSON.stringify(variance === null ? null : Math.sqrt(variance))}}`
    }
    const optionJson = withOptions
      ? choices.map((o) =>
        `{"value":${JSON.stringify(o.value)},"label":${JSON.stringify(o.label)},"count":${countOf(o.value).count}}`
      )
      : []
    const ranking = q.type === "sort"
      ? `[${
        choices.map((o) => {
          const { count, rankSum } = countOf(o.value)
          return `{"value":${JSON.stringify(o.value)},"label":${JSON.stringify(o.label)},"count":${count},"averageRank":${
            JSON.stringify(count > 0 ? rankSum / count : null)
          }}`
        }).join(",")
      }]`
      : "null"
    return `{"id":${JSON.stringify(q.id)},"respondentCount":${answered},"skippedCount":${
      Math.max(0, reachAtOrAfter(q.position) - answered)
    },"textAnswerCount":${c?.text_count ?? 0},"options":[${optionJson.join(",")}],"numeric":${numeric},"ranking":${ranking}}`
  })
  return `{"responseCount":${responseCount},"completedCount":${completedCount},"incompleteCount":${
    responseCount - completedCount
  },"completionRate":${JSON.stringify(responseCount > 0 ? completedCount / responseCount : null)},"questions":[${
    questions.join(",")
  }]}`
}

const responseById = db.query<ResponseRow, [string, string]>(
  `SELECT ${responseColumns} FROM responses WHERE id = ? AND survey_id = ?`
)

const route = (request: Request, url: URL, requestId: string): Response => {
  const path = url.pathname
  if (path === "/healthz" && request.method === "GET") return json(200, `{"status":"ok"}`, requestId)
  if (path === "/api/v1/usage" && request.method === "GET") {
    const key = authenticate(request, requestId)
    const headers = countRequest(key, requestId)
    return json(200, usageJson(key), requestId, headers)
  }
  const parts = path.startsWith("/api/v1/surveys") ? path.slice("/api/v1/".length).split("/") : []
  if (request.method !== "GET" || parts.length === 0 || parts.length > 4 || parts.some((p) => p === "")) {
    return error(404, "not_found", `No route for ${request.method} ${path}.`, requestId)
  }
  const key = authenticate(request, requestId)
  const headers = countRequest(key, requestId)
  const ok = (body: string) => json(200, body, requestId, headers)
  const surveyId = parts[1] === undefined ? undefined : decodeURIComponent(parts[1])
  if (surveyId === undefined) return ok(listSurveys(key, url.searchParams, requestId))
  const survey = requireSurvey(key, surveyId, requestId)
  if (parts.length === 2) return ok(surveyJson(survey))
  if (parts[2] === "questions" && parts.length === 3) return ok(listQuestions(surveyId))
  if (parts[2] === "analytics" && parts.length === 3) return ok(analyticsJson(surveyId))
  if (parts[2] === "responses" && parts.length === 3) return ok(listResponses(surveyId, url.searchParams, requestId))
  if (parts[2] === "responses" && parts[3] !== undefined) {
    const row = responseById.get(decodeURIComponent(parts[3]), surveyId)
    if (row === null) return error(404, "not_found", "No response with that id in this survey.", requestId, headers)
    return ok(responsesJson(surveyId, [row])[0] ?? "")
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
