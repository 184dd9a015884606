/**
 * The raw baseline of the read benchmark on PostgreSQL: plain `Bun.serve` and the `pg` driver
 * (node-postgres), no Effect. The SQLite baseline's counterpart (scripts/bench/baseline.ts), with
 * the answers written by the same code (scripts/bench/BaselineWire.ts).
 *
 * The driver is `pg`, the one under the service's `@effect/sql-pg`: the ratio then measures what
 * the service does around the driver (Effect, the SQL client's statement machinery, the HttpApi,
 * the quota's batching), not a difference of drivers that the service could only close by
 * changing its client. Its statements are prepared once per connection (named statements), rows
 * come as arrays, and values are parsed as the service parses them (src/Sql/PgText.ts).
 *
 * The work per request and its guarantees are the service's:
 *
 * - **Keys.** SHA-256 of the bearer token; the access generation read on every request, the key
 *   lookup (src/Auth/KeyLookupSql.ts) only when it moved.
 * - **The quota, exact across processes.** The service's batching (src/Quota/Batching.ts): the
 *   requests that arrive while a batch is open are decided together in one transaction, one batch
 *   of a process at a time. The transaction locks each account's day row (in account order); the
 *   counters in memory are used when the locked count is the one this process last stored, else
 *   read again; the admitted requests are stored before the commit, and each request is answered
 *   once its batch has committed. `GET /usage` reads the day's count back as the service does.
 * - **Reads.** The same statements as the service (one per read), the same JSON bytes and headers.
 *
 * Usage: bun scripts/bench/pgBaseline.ts --port 8082 --database-url postgres://… [--pool 10]
 */
import * as Pg from "pg"
import { parseArgs } from "node:util"
import { analyticsSnapshotSql } from "../../src/Analytics/SnapshotSql.js"
import { accessGenerationSql, keyLookupSql } from "../../src/Auth/KeyLookupSql.js"
import { hashToken } from "../../src/Auth/Token.js"
import { randomBase62 } from "../../src/Domain/Ids.js"
import { AccountUsage, type Decision } from "../../src/Quota/AccountUsage.js"
import { utcDay, utcMonth } from "../../src/Quota/Calendar.js"
import { pgParsers, toNumbered } from "../../src/Sql/PgText.js"
import * as Wire from "./BaselineWire.js"
import * as BatchQueue from "./BatchQueue.js"

const { values: args } = parseArgs({
  options: {
    port: { type: "string", default: "8082" },
    "database-url": { type: "string" },
    pool: { type: "string", default: "10" }
  },
  strict: true
})
const url = args["database-url"]
if (url === undefined) throw new Error("--database-url is required")

const pool = new Pg.Pool({
  connectionString: url,
  application_name: "survey-baseline",
  max: Number(args.pool),
  types: { getTypeParser: ((oid: number) => pgParsers[oid] ?? ((value: string) => value)) as Pg.CustomTypesConfig["getTypeParser"] }
})
pool.on("error", () => {})

/** Each text gets one statement name: prepared once on each connection that runs it. */
const names = new Map<string, string>()
const config = (text: string, values: ReadonlyArray<unknown>, rowMode?: "array"): Pg.QueryConfig => {
  let name = names.get(text)
  if (name === undefined) {
    name = `b${names.size}`
    names.set(text, name)
  }
  return { name, text: toNumbered(text), values: [...values], ...(rowMode === undefined ? {} : { rowMode }) }
}

type Runner = Pick<Pg.Pool, "query"> | Pg.PoolClient

const rows = async <Row>(on: Runner, text: string, values: ReadonlyArray<unknown>): Promise<Array<Row>> =>
  (await on.query(config(text, values))).rows as Array<Row>

const valueRows = async <Row>(on: Runner, text: string, values: ReadonlyArray<unknown>): Promise<Array<Row>> =>
  (await on.query(config(text, values, "array"))).rows as Array<Row>

// --- Keys ---------------------------------------------------------------------------------------

const remembered = new Map<string, { readonly generation: number; readonly found: Wire.Lookup }>()

const lookupKey = async (tokenHash: string): Promise<Wire.Lookup> => {
  const generation = (await rows<{ value: number }>(pool, accessGenerationSql, []))[0]?.value ?? 0
  const known = remembered.get(tokenHash)
  if (known !== undefined && known.generation === generation) return known.found
  const found = Wire.decide((await rows<Wire.KeyRow>(pool, keyLookupSql, [tokenHash]))[0] ?? null)
  if (found._tag !== "Unknown") {
    if (remembered.size >= 10_000) remembered.clear()
    remembered.set(tokenHash, { generation, found })
  }
  return found
}

const authenticate = async (request: Request, requestId: string): Promise<Wire.Key> =>
  Wire.keyOf(await lookupKey(hashToken(Wire.bearerToken(request, requestId))), requestId)

// --- The quota: the service's batching (src/Quota/Batching.ts, src/Quota/PgUsageStore.ts) ------

const PRUNE_EVERY_MS = 10_000
const lockDaySql = `INSERT INTO usage_daily (account_id, day, count) VALUES (?, ?, 0)
  ON CONFLICT (account_id, day) DO UPDATE SET count = usage_daily.count RETURNING count`
const dayCountSql = "SELECT count FROM usage_daily WHERE account_id = ? AND day = ?"
const monthCountSql = "SELECT COALESCE(SUM(count), 0) AS count FROM usage_daily WHERE account_id = ? AND day >= ? AND day <= ?"
const burstRowsSql = "SELECT at_ms, count FROM usage_burst WHERE account_id = ? AND at_ms > ? ORDER BY at_ms"
const addDaySql = `INSERT INTO usage_daily (account_id, day, count) VALUES (?, ?, ?)
  ON CONFLICT (account_id, day) DO UPDATE SET count = usage_daily.count + excluded.count`
const addStampSql = `INSERT INTO usage_burst (account_id, at_ms, count) VALUES (?, ?, ?)
  ON CONFLICT (account_id, at_ms) DO UPDATE SET count = usage_burst.count + excluded.count`
const pruneSql = "DELETE FROM usage_burst WHERE account_id = ? AND at_ms <= ?"

/** The counters of an account as this process last stored them, and the UTC day they belong to. */
const known = new Map<string, { readonly usage: AccountUsage; readonly day: string }>()
const lastPruned = new Map<string, number>()

type Waiting = BatchQueue.Waiting<{ readonly key: Wire.Key }, Decision>

const loadUsage = async (client: Pg.PoolClient, accountId: string, now: number, windowMs: number) => {
  const today = (await rows<{ count: number }>(client, dayCountSql, [accountId, utcDay(now)]))[0]?.count ?? 0
  const month = utcMonth(now)
  const thisMonth = (await rows<{ count: number }>(client, monthCountSql, [accountId, `${month}-01`, `${month}-31`]))[0]?.count ?? 0
  const burst: Array<number> = []
  for (const row of await rows<{ at_ms: number; count: number }>(client, burstRowsSql, [accountId, now - windowMs])) {
    for (let i = 0; i < row.count; i++) burst.push(row.at_ms)
  }
  return new AccountUsage({ dayCount: today, monthCount: thisMonth, burst }, now)
}

/** Decides and stores one batch in one transaction; answers each request once it has committed. */
const settle = async (batch: ReadonlyArray<Waiting>) => {
  const now = Date.now()
  const day = utcDay(now)
  const client = await pool.connect()
  const synced = new Map<string, AccountUsage>()
  try {
    await client.query("BEGIN")
    const accounts = new Map(batch.map((w) => [w.key.accountId, w.key]))
    for (const [accountId, key] of [...accounts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const locked = (await rows<{ count: number }>(client, lockDaySql, [accountId, day]))[0]?.count ?? 0
      const cached = known.get(accountId)
      synced.set(
        accountId,
        cached !== undefined && cached.day === day && cached.usage.current(now, key.plan).today === locked
          ? cached.usage
          : await loadUsage(client, accountId, now, Wire.windowMsOf(key.plan))
      )
    }
    const decisions: Array<Decision> = []
    const days = new Map<string, number>()
    for (const w of batch) {
      const usage = synced.get(w.key.accountId)
      if (usage === undefined) throw new Error(`no counters for ${w.key.accountId}`)
      const decision = usage.take(now, w.key.plan)
      decisions.push(decision)
      if (decision._tag === "Admitted") days.set(w.key.accountId, (days.get(w.key.accountId) ?? 0) + 1)
    }
    for (const [accountId, count] of days) {
      await rows(client, addDaySql, [accountId, day, count])
      await rows(client, addStampSql, [accountId, now, count])
    }
    const pruned: Array<string> = []
    for (const [accountId, key] of accounts) {
      if ((lastPruned.get(accountId) ?? Number.NEGATIVE_INFINITY) + PRUNE_EVERY_MS <= now) {
        await rows(client, pruneSql, [accountId, now - Wire.windowMsOf(key.plan)])
        pruned.push(accountId)
      }
    }
    await client.query("COMMIT")
    for (const accountId of pruned) lastPruned.set(accountId, now)
    for (const [accountId, usage] of synced) known.set(accountId, { usage, day })
    batch.forEach((w, i) => {
      const decision = decisions[i]
      if (decision === undefined) w.reject(new Error("a batch answered fewer decisions than requests"))
      else w.resolve(decision)
    })
  } catch (cause) {
    await client.query("ROLLBACK").catch(() => undefined)
    for (const w of batch) known.delete(w.key.accountId)
    for (const w of batch) w.reject(cause)
  } finally {
    client.release()
  }
}

const join = BatchQueue.makeBatchQueue<{ readonly key: Wire.Key }, Decision>(settle)

/**
 * The request's decision, in the batch it joins: the batch closes on the event-loop turn after
 * its first request, or later, once the batch before it is stored.
 */
const take = (key: Wire.Key) => join({ key })

/**
 * Counts the request against its key creator's quota where the service's limiter counts (after
 * the plan gate, before the handler): 429 when a limit is reached, 503 when the batch could not
 * be stored; otherwise the RateLimit-* headers to send.
 */
const countRequest = async (key: Wire.Key, requestId: string): Promise<Record<string, string>> => {
  let decision: Decision
  try {
    decision = await take(key)
  } catch {
    throw Wire.busy(requestId)
  }
  if (decision._tag === "Limited") throw Wire.limited(decision.headers, decision.retryAfterSeconds, requestId)
  return Wire.rateLimitHeaders(decision.headers)
}

/** GET /usage: the day's count as stored now, which every process adds to before it answers. */
const usage = async (key: Wire.Key) => {
  const now = Date.now()
  return Wire.usageJson(key.plan, (await rows<{ count: number }>(pool, dayCountSql, [key.accountId, utcDay(now)]))[0]?.count ?? 0, now)
}

// --- Reads --------------------------------------------------------------------------------------

const requireSurvey = async (key: Wire.Key, surveyId: string, requestId: string): Promise<Wire.SurveyRow> =>
  Wire.visibleSurvey(key, surveyId, (await rows<Wire.SurveyRow>(pool, surveyByIdSql, [surveyId]))[0], requestId)

const surveyByIdSql = `SELECT ${Wire.surveyColumns} FROM surveys WHERE id = ?`
const questionsSql = `SELECT q.id, q.type, q.label, q.required, q.allow_multiple, q.position, q.options
  FROM questions q WHERE q.survey_id = ? AND q.deleted = 0 AND q.type <> 'section' ORDER BY q.position, q.id`

const listSurveys = async (key: Wire.Key, params: URLSearchParams, requestId: string) => {
  const { fingerprint, limit, query } = Wire.surveysQuery(key, params, requestId)
  return Wire.pageOfSurveys(query === null ? [] : await rows<Wire.SurveyRow>(pool, query.text, query.params), limit, fingerprint)
}

const answersJson = async (surveyId: string, responses: ReadonlyArray<Wire.ResponseRow>) =>
  responses.length === 0
    ? []
    : Wire.responsesJson(responses, await rows<Wire.AnswerRow>(pool, Wire.answersOf(responses.length), [surveyId, ...responses.map((r) => r.id)]))

const listResponses = async (surveyId: string, params: URLSearchParams, requestId: string) => {
  const { fingerprint, limit, query } = Wire.responsesQuery(surveyId, params, requestId)
  const page = await valueRows<Wire.PageRow>(pool, query.text, query.params)
  const missing = Wire.staleRows(page, limit)
  const texts = await answersJson(surveyId, missing)
  return Wire.pageOfResponses(page, limit, fingerprint, new Map(missing.map((r, i) => [r.id, texts[i] ?? ""])))
}

const responseByIdSql = `SELECT ${Wire.responseColumns} FROM responses WHERE id = ? AND survey_id = ?`

const route = async (request: Request, url: URL, requestId: string): Promise<Response> => {
  const path = url.pathname
  if (path === "/healthz" && request.method === "GET") return Wire.json(200, `{"status":"ok"}`, requestId)
  if (path === "/api/v1/usage" && request.method === "GET") {
    const key = await authenticate(request, requestId)
    const headers = await countRequest(key, requestId)
    return Wire.json(200, await usage(key), requestId, headers)
  }
  const parts = path.startsWith("/api/v1/surveys") ? path.slice("/api/v1/".length).split("/") : []
  if (request.method !== "GET" || parts.length === 0 || parts.length > 4 || parts.some((p) => p === "")) {
    return Wire.error(404, "not_found", `No route for ${request.method} ${path}.`, requestId)
  }
  const key = await authenticate(request, requestId)
  const headers = await countRequest(key, requestId)
  const ok = (body: string, extra: Record<string, string> = {}) => Wire.json(200, body, requestId, { ...headers, ...extra })
  const surveyId = parts[1] === undefined ? undefined : decodeURIComponent(parts[1])
  if (surveyId === undefined) return ok(await listSurveys(key, url.searchParams, requestId))
  const survey = await requireSurvey(key, surveyId, requestId)
  if (parts.length === 2) return ok(Wire.surveyJson(survey), Wire.surveyEtag(survey))
  if (parts[2] === "questions" && parts.length === 3) {
    return ok(`{"data":[${(await rows<Wire.QuestionRow>(pool, questionsSql, [surveyId])).map(Wire.questionJson).join(",")}]}`, Wire.surveyEtag(survey))
  }
  if (parts[2] === "analytics" && parts.length === 3) {
    return ok(Wire.analyticsJson(await valueRows<ReadonlyArray<unknown>>(pool, analyticsSnapshotSql, [surveyId])))
  }
  if (parts[2] === "responses" && parts.length === 3) return ok(await listResponses(surveyId, url.searchParams, requestId))
  if (parts[2] === "responses" && parts[3] !== undefined) {
    const row = (await rows<Wire.ResponseRow>(pool, responseByIdSql, [decodeURIComponent(parts[3]), surveyId]))[0]
    if (row === undefined) return Wire.error(404, "not_found", "No response with that id in this survey.", requestId, headers)
    return ok((await answersJson(surveyId, [row]))[0] ?? "")
  }
  return Wire.error(404, "not_found", `No route for ${request.method} ${path}.`, requestId)
}

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: Number(args.port),
  async fetch(request) {
    const incoming = request.headers.get("x-request-id")
    const requestId = incoming !== null && Wire.requestIdPattern.test(incoming) ? incoming : `req_${randomBase62(16)}`
    try {
      return await route(request, new URL(request.url), requestId)
    } catch (e) {
      if (e instanceof Wire.Answered) return e.response
      console.error(e)
      return Wire.error(500, "internal_error", "The service failed to answer this request; it has been logged.", requestId)
    }
  }
})
process.on("SIGTERM", () => {
  void pool.end().finally(() => process.exit(0))
})
console.log(`PostgreSQL baseline listening on http://127.0.0.1:${server.port}`)
