/**
 * What the two raw baselines of the read benchmark share (scripts/bench/baseline.ts on SQLite,
 * scripts/bench/pgBaseline.ts on PostgreSQL): the request's key and its checks, the answers' JSON
 * bytes and headers, the cursors and the parsing of the query string. Pure functions over rows;
 * the modules imported from src/ import nothing themselves.
 */
import { medianOf } from "../../src/Analytics/Median.js"
import type { RateLimitHeaders } from "../../src/Quota/AccountUsage.js"
import { nextUtcMidnight } from "../../src/Quota/Calendar.js"

export interface Key {
  readonly id: string
  readonly workspaceId: string
  readonly accountId: string
  readonly surveyIds: ReadonlySet<string> | null
  readonly plan: Plan
}

export interface Plan {
  readonly planId: string
  readonly burstLimit: number
  readonly burstWindowMinutes: number
  readonly dailyLimit: number
  readonly monthlyLimit: number
}

export interface KeyRow {
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

export interface SurveyRow {
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
export const surveyColumns =
  "id, workspace_id, title, description, status, trashed, question_count, response_count, created_at, updated_at"

export interface ResponseRow {
  id: string
  survey_id: string
  external_user_id: string | null
  completed_at: string | null
  created_at: string
  updated_at: string
}
export interface AnswerRow {
  response_id: string
  question_id: string
  value: string
  values: string
  type: string | null
  position: number | null
}

export const json = (status: number, body: string, requestId: string, extra: Record<string, string> = {}) =>
  new Response(body, {
    status,
    headers: { "Content-Type": "application/json", "x-request-id": requestId, ...extra }
  })

export const error = (status: number, code: string, message: string, requestId: string, extra?: Record<string, string>) =>
  json(status, JSON.stringify({ code, message }), requestId, extra)

export class Answered extends Error {
  constructor(readonly response: Response) {
    super("answered")
  }
}

export const requestIdPattern = /^[A-Za-z0-9._-]{8,128}$/
export const tokenShape = /^[A-Za-z0-9_\-]{8,200}$/

export type Lookup =
  | { readonly _tag: "Unknown" }
  | { readonly _tag: "NotMember" }
  | { readonly _tag: "NoApiAccess" }
  | { readonly _tag: "Valid"; readonly key: Key }

export const decide = (row: KeyRow | null): Lookup => {
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

const unauthorized = (message: string, requestId: string) => new Answered(error(401, "unauthorized", message, requestId))

/** The bearer token of the request, refused (401) when it cannot be a key. */
export const bearerToken = (request: Request, requestId: string): string => {
  const raw = (request.headers.get("authorization") ?? "").slice("Bearer ".length).trim()
  if (!tokenShape.test(raw)) throw unauthorized("Send an API key as `Authorization: Bearer <API_KEY>`.", requestId)
  return raw
}

/** The key of a lookup, or the refusal the service answers for it. */
export const keyOf = (found: Lookup, requestId: string): Key => {
  switch (found._tag) {
    case "Unknown":
      throw unauthorized("The API key is not valid or has been revoked.", requestId)
    case "NotMember":
      throw unauthorized("The API key's creator no longer has access to the workspace.", requestId)
    case "NoApiAccess":
      throw new Answered(
        error(403, "plan_upgrade_required", "The workspace owner's plan does not include API access.", requestId)
      )
    case "Valid":
      return found.key
  }
}

export const windowMsOf = (plan: Plan) => plan.burstWindowMinutes * 60_000

export const rateLimitHeaders = (h: RateLimitHeaders): Record<string, string> => ({
  "ratelimit-limit": String(h.limit),
  "ratelimit-remaining": String(h.remaining),
  "ratelimit-reset": String(h.resetSeconds)
})

export const busy = (requestId: string) =>
  new Answered(
    error(503, "service_unavailable", "The service is busy; nothing changed and the request may be retried.", requestId)
  )

export const limited = (headers: RateLimitHeaders, retryAfterSeconds: number, requestId: string) =>
  new Answered(
    error(
      429,
      "rate_limited",
      `Request quota exhausted; retry in ${retryAfterSeconds} s.`,
      requestId,
      { ...rateLimitHeaders(headers), "retry-after": String(retryAfterSeconds) }
    )
  )

/** GET /usage (api-v1 §2.9): the plan's limits and the day's count at `now`. */
export const usageJson = (plan: Plan, today: number, now: number) =>
  `{"burstLimit":${plan.burstLimit},"burstWindowMinutes":${plan.burstWindowMinutes},"dailyLimit":${plan.dailyLimit},"usedToday":${today},"remainingToday":${
    Math.max(0, plan.dailyLimit - today)
  },"monthlyLimit":${plan.monthlyLimit},"resetAt":${JSON.stringify(new Date(nextUtcMidnight(now)).toISOString())}}`

/** The survey access rules of decisions §3 on the row read by id. */
export const visibleSurvey = (key: Key, surveyId: string, row: SurveyRow | null | undefined, requestId: string): SurveyRow => {
  if (row === null || row === undefined || row.workspace_id !== key.workspaceId || row.trashed !== 0) {
    throw new Answered(
      error(404, "not_found", `No survey with id ${JSON.stringify(surveyId.slice(0, 64))}.`, requestId)
    )
  }
  if (key.surveyIds !== null && !key.surveyIds.has(surveyId)) {
    throw new Answered(error(403, "forbidden", "This API key is limited to other surveys.", requestId))
  }
  return row
}

export const surveyJson = (r: SurveyRow) =>
  `{"id":${JSON.stringify(r.id)},"title":${JSON.stringify(r.title)},"description":${
    JSON.stringify(r.description)
  },"status":${JSON.stringify(r.status)},"published":${r.status === "published"},"questionCount":${r.question_count},"responseCount":${r.response_count},"createdAt":${
    JSON.stringify(r.created_at)
  },"updatedAt":${JSON.stringify(r.updated_at)}}`

/** A survey's version as the `ETag` of its GET and of its questions: its `updatedAt` in milliseconds, base 36. */
export const surveyEtag = (r: SurveyRow): Record<string, string> => ({ etag: `"${Date.parse(r.updated_at).toString(36)}"` })

export const invalid = (requestId: string, path: string, message: string) =>
  new Answered(json(
    400,
    JSON.stringify({ code: "invalid_request", message: `Invalid \`${path}\`: ${message}`, issues: [{ path, message }] }),
    requestId
  ))

export const limitOf = (params: URLSearchParams, requestId: string) => {
  const raw = params.get("limit")
  if (raw === null) return 25
  const n = Number(raw)
  if (raw.trim() === "" || !Number.isInteger(n) || n < 1 || n > 100) {
    throw invalid(requestId, "limit", "limit must be a whole number from 1 to 100")
  }
  return n
}

export const encodeCursor = (key: string, id: string, fingerprint: string) =>
  Buffer.from(JSON.stringify({ k: key, i: id, f: fingerprint })).toString("base64url")

export const decodeCursor = (params: URLSearchParams, fingerprint: string, requestId: string) => {
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

export const isoWithOffset = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/i

/** A statement's text with `?` placeholders and its parameters. */
export interface Query {
  readonly text: string
  readonly params: ReadonlyArray<string | number>
}

/** GET /surveys: the page's statement; `pageOfSurveys` writes its answer. */
export const surveysQuery = (key: Key, params: URLSearchParams, requestId: string) => {
  const limit = limitOf(params, requestId)
  const fingerprint = `surveys:${key.workspaceId}`
  const after = decodeCursor(params, fingerprint, requestId)
  const ids = key.surveyIds === null ? null : [...key.surveyIds]
  const query: Query | null = ids !== null && ids.length === 0 ? null : {
    text: `SELECT ${surveyColumns} FROM surveys WHERE workspace_id = ? AND trashed = 0` +
      (ids === null ? "" : ` AND id IN (${ids.map(() => "?").join(", ")})`) +
      (after === null ? "" : " AND (updated_at, id) < (?, ?)") +
      " ORDER BY updated_at DESC, id DESC LIMIT ?",
    params: [key.workspaceId, ...(ids ?? []), ...(after === null ? [] : [after.key, after.id]), limit + 1]
  }
  return { query, limit, fingerprint }
}

export const pageOfSurveys = (rows: ReadonlyArray<SurveyRow>, limit: number, fingerprint: string) => {
  const page = rows.slice(0, limit)
  const last = page[page.length - 1]
  const next = rows.length > limit && last !== undefined ? encodeCursor(last.updated_at, last.id, fingerprint) : null
  return `{"data":[${page.map(surveyJson).join(",")}],"nextCursor":${JSON.stringify(next)}}`
}

export interface QuestionRow {
  id: string
  type: string
  label: string
  required: number
  allow_multiple: number
  position: number
  options: string
}

/** One question of GET /surveys/{id}/questions; sections are not listed. */
export const questionJson = (q: QuestionRow) => {
  const options = (JSON.parse(q.options) as Array<{ value: string; label: string }>)
    .map((o) => `{"value":${JSON.stringify(o.value)},"label":${JSON.stringify(o.label)}}`)
  return `{"id":${JSON.stringify(q.id)},"type":${JSON.stringify(q.type)},"label":${
    JSON.stringify(q.label)
  },"required":${q.required !== 0},"allowMultiple":${q.allow_multiple !== 0},"order":${q.position},"options":[${
    options.join(",")
  }]}`
}

const rank = (a: AnswerRow) =>
  a.type === null || a.type === "section" ? Number.POSITIVE_INFINITY : a.position ?? 0

/** The answers of `rows` with the survey's questions; `answersOf` (count) writes its text. */
export const answersOf = (count: number) =>
  `SELECT a.response_id, a.question_id, a.value, a."values",
            CASE WHEN q.deleted = 0 THEN q.type END AS type, q.position
     FROM answers a
     LEFT JOIN questions q ON q.id = a.question_id AND q.survey_id = ?
     WHERE a.response_id IN (${Array.from({ length: count }, () => "?").join(", ")})`

/** Responses written from their answer rows (those whose stored rendering is stale). */
export const responsesJson = (rows: ReadonlyArray<ResponseRow>, answers: ReadonlyArray<AnswerRow>): Array<string> => {
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

export const responseColumns = "id, survey_id, external_user_id, completed_at, created_at, updated_at"

/** A row of the responses page: the response's columns, then its rendering of `answers` or null. */
export type PageRow = [string, string, string | null, string | null, string, string, string | null]

/**
 * GET /surveys/{id}/responses: the page's statement. The layout of migration 0009: one range read
 * of the responses table (clustered by survey_id, created_at, id), each row with its stored
 * rendering of `answers` when that is current for the survey's questions.
 */
export const responsesQuery = (surveyId: string, params: URLSearchParams, requestId: string) => {
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
  const query: Query = {
    text: `SELECT ${responseColumns},
      CASE WHEN answers_layout = (SELECT answer_layout FROM surveys WHERE id = ?) THEN answers_json END
    FROM responses WHERE survey_id = ?` +
      (status === "all" ? "" : " AND completed = ?") +
      (createdAfter === null ? "" : " AND created_at >= ?") +
      (after === null ? "" : " AND (created_at, id) > (?, ?)") +
      " ORDER BY created_at, id LIMIT ?",
    params: [
      surveyId,
      surveyId,
      ...(status === "all" ? [] : [status === "completed" ? 1 : 0]),
      ...(createdAfter === null ? [] : [createdAfter]),
      ...(after === null ? [] : [after.key, after.id]),
      limit + 1
    ]
  }
  return { query, limit, fingerprint }
}

/** The page's rows without a current rendering, as `responsesJson` takes them. */
export const staleRows = (rows: ReadonlyArray<PageRow>, limit: number): Array<ResponseRow> =>
  rows.slice(0, limit).filter((r) => r[6] === null).map((r): ResponseRow => ({
    id: r[0],
    survey_id: r[1],
    external_user_id: r[2],
    completed_at: r[3],
    created_at: r[4],
    updated_at: r[5]
  }))

/** The page written out in one pass; `stale` holds the texts of the rows without a current rendering. */
export const pageOfResponses = (
  rows: ReadonlyArray<PageRow>,
  limit: number,
  fingerprint: string,
  stale: ReadonlyMap<string, string>
) => {
  const count = Math.min(limit, rows.length)
  let body = `{"data":[`
  for (let i = 0; i < count; i++) {
    const r = rows[i]!
    if (i > 0) body += ","
    body += r[6] === null
      ? stale.get(r[0]) ?? ""
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

// --- Analytics: the stored aggregate tables (src/Analytics/*) read in one statement ------------

interface StoredQuestion {
  id: string
  type: string
  position: number
  deleted: number
  options: string
}

/** GET /surveys/{id}/analytics from the rows of `analyticsSnapshotSql` (src/Analytics/SnapshotSql.ts). */
export const analyticsJson = (rows: ReadonlyArray<ReadonlyArray<unknown>>) => {
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
  let signature: string | null = null
  let rebuilding = false
  for (const row of rows as Array<[number, string, string, number, number, number, number, number, string]>) {
    const [kind, questionId, value, a, b, c, d, e, f] = row
    if (kind === 6) {
      rebuilding = a !== 0
    } else if (kind === 5) {
      // id, type, position, deleted, options
      questionRows.push({ id: questionId, type: value, position: a, deleted: b, options: f })
    } else if (kind === 0) {
      signature = value
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
  const layout = questionRows.map((q) => `${q.id}:${q.type}:${q.position}:${q.deleted === 0 ? 0 : 1}`).sort().join(",")
  const stale = rebuilding || (signature !== null && signature !== layout)
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
  }],"stale":${stale}}`
}

