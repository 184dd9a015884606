/**
 * The raw baseline of the completions benchmark on PostgreSQL (scripts/bench/completions.ts):
 * `POST /respond/v1/responses` with a survey page's token, on plain `Bun.serve` and the `pg`
 * driver (the driver under the service's `@effect/sql-pg`). Statements are prepared once per
 * connection (named statements). No Effect runs on a completion's path; a refused request's body
 * comes from the service's own errors (src/Domain/Errors.ts, src/Http/RequestErrors.ts), so that
 * its bytes are the service's.
 *
 * The work per request and its guarantees are the service's (src/Respondents/Http.ts,
 * src/Responses/ResponseWriter.ts):
 *
 * - **The token.** A survey page's signed token (`p1.…`, src/Respondents/RespondentTokens.ts),
 *   verified with the database's key (`service_secrets`, read once at start as the service does):
 *   shape, 24 hours from its issue, HMAC-SHA256 compared in constant time. Stored (embed) tokens
 *   are not served: the benchmark sends page tokens only.
 * - **The respondent limits**, counted where the service counts them: the client address before
 *   the token is read, the token's survey after, in process memory by the service's own tables
 *   (src/Respondents/AdmissionTable.ts); past a limit, the service's 429 with `Retry-After`. The
 *   limits are the service's settings, `RESPONDENT_LIMIT_PER_ADDRESS` and
 *   `RESPONDENT_LIMIT_PER_SURVEY`, with its defaults; the address is the connection's (no proxy is
 *   trusted).
 * - **The body.** The respondent API's body rules (JSON, 256 KiB, 64 levels) and `Submission`
 *   (unknown fields refused); the answers validated against the survey's questions by the
 *   service's own functions (src/Responses/AnswerValidation.ts), required questions checked when
 *   it finishes.
 * - **One transaction** with the service's rows: the response, its owner token, its answers and
 *   their stored rendering tagged with the survey's `answer_layout`, the change instant in
 *   `updated_at`/`created_at`/`completed_at` and a `response_changes` row, the outbox events with
 *   the service's envelope bytes, and the survey's response count.
 * - **The change clock of the shared design**: the instant stamped in the statement that locks the
 *   survey's `response_clock` row until COMMIT (so that within a survey instants follow commit
 *   order), the survey's count the last statement before COMMIT.
 *
 * Usage: bun scripts/bench/pgCompletionsBaseline.ts --port 8083 --database-url postgres://… [--pool 10]
 */
import { HttpApiError } from "@effect/platform"
import { Effect, Either, Schema } from "effect"
import { createHmac, timingSafeEqual } from "node:crypto"
import { parseArgs } from "node:util"
import * as Pg from "pg"
import { hashToken } from "../../src/Auth/Token.js"
import { DEFAULT_RESPONDENT_LIMITS } from "../../src/Config.js"
import { storedValue } from "../../src/Domain/AnswerValue.js"
import { InvalidRequest, type Issue, RateLimited, Unauthorized } from "../../src/Domain/Errors.js"
import { makeId, randomBase62 } from "../../src/Domain/Ids.js"
import { StoredQuestionType } from "../../src/Domain/Question.js"
import { tokenRefused } from "../../src/Domain/Respondent.js"
import { exceedsJsonDepth, isJsonContentType, MAX_RESPONDENT_BODY_BYTES, notJsonContentType, tooDeep, tooLarge } from "../../src/Http/JsonBody.js"
import { toInvalidRequest } from "../../src/Http/RequestErrors.js"
import { addressKey } from "../../src/Http/ClientAddress.js"
import { makeAdmissions, retryAfterSeconds } from "../../src/Respondents/AdmissionTable.js"
import { RESPONDENT_TOKEN_HOURS } from "../../src/Respondents/RespondentTokens.js"
import { type CheckedAnswer, missingRequired, validateAnswers, type ValidationQuestion } from "../../src/Responses/AnswerValidation.js"
import { answerOrder, answersJson, responseJson } from "../../src/Responses/AnswerWire.js"
import { MAX_TEXT_LENGTH } from "../../src/Domain/Response.js"
import { Submission } from "../../src/Responses/Submission.js"

const { values: args } = parseArgs({
  options: { port: { type: "string", default: "8083" }, "database-url": { type: "string", default: "" }, pool: { type: "string", default: "10" } },
  strict: true
})
if (args["database-url"] === "") throw new Error("--database-url is required")

// Every column read is text or a 4-byte integer, which the driver's own parsers take as they are.
const pool = new Pg.Pool({ connectionString: args["database-url"], application_name: "survey-completions-baseline", max: Number(args.pool) })
pool.on("error", () => {})

const names = new Map<string, string>()
/** Runs `text` as a named statement (prepared once on each connection); rows as arrays. */
const run = async (on: Pg.PoolClient | Pg.Pool, text: string, values: ReadonlyArray<unknown>) => {
  let name = names.get(text)
  if (name === undefined) {
    name = `c${names.size}`
    names.set(text, name)
  }
  const result = await on.query({ name, text, values: [...values], rowMode: "array" })
  const rows: Array<ReadonlyArray<unknown>> = result.rows
  return rows
}

const text = (value: unknown): string => {
  if (typeof value !== "string") throw new Error(`expected a text column, got ${typeof value}`)
  return value
}
const num = (value: unknown): number => {
  if (typeof value !== "number") throw new Error(`expected a number column, got ${typeof value}`)
  return value
}

// --- Answers ------------------------------------------------------------------------------------

class Answered extends Error {
  constructor(readonly status: number, readonly body: string, readonly headers: Record<string, string> = {}) {
    super("answered")
  }
}

const encodeInvalid = Schema.encodeSync(InvalidRequest.Wire)

/** A 400 `invalid_request` answer with the service's body. */
const refusedWith = (error: InvalidRequest) => new Answered(400, JSON.stringify(encodeInvalid(error)))

const invalid = (message: string, issues: ReadonlyArray<Issue>) => refusedWith(new InvalidRequest({ message, issues }))

const refused = new Answered(401, JSON.stringify(Schema.encodeSync(Unauthorized.Wire)(tokenRefused())))

// --- The respondent limits (src/Respondents/RespondentLimits.ts) --------------------------------

/** A limit from the service's setting: a whole number of requests per minute from 1 to 1,000,000. */
const limitOf = (name: string, fallback: number) => {
  const raw = process.env[name]
  const limit = raw === undefined ? fallback : Number(raw)
  if (!Number.isInteger(limit) || limit < 1 || limit > 1_000_000) throw new Error(`${name}: expected a whole number from 1 to 1000000`)
  return limit
}

const admissions = makeAdmissions({
  perAddress: limitOf("RESPONDENT_LIMIT_PER_ADDRESS", DEFAULT_RESPONDENT_LIMITS.perAddress),
  perSurvey: limitOf("RESPONDENT_LIMIT_PER_SURVEY", DEFAULT_RESPONDENT_LIMITS.perSurvey),
  capacity: DEFAULT_RESPONDENT_LIMITS.entries
})

const encodeLimited = Schema.encodeSync(RateLimited.Wire)

/** Goes on when the request was admitted (`wait` 0); otherwise the service's 429. */
const counted = (wait: number, what: string) => {
  if (wait === 0) return
  const seconds = retryAfterSeconds(wait)
  throw new Answered(
    429,
    JSON.stringify(encodeLimited(new RateLimited({ message: `Too many requests ${what}; retry in ${seconds} s.`, retryAfterSeconds: seconds }))),
    { "retry-after": String(seconds) }
  )
}

// --- The token (src/Respondents/RespondentTokens.ts) --------------------------------------------

const signedTokenShape = /^p1\.([A-Za-z0-9_-]{1,400})\.([0-9a-z]{1,12})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/

const keyRows = await run(pool, "SELECT secret FROM service_secrets WHERE name = 'respondent-token'", [])
const signingKey = Buffer.from(text(keyRows[0]?.[0]), "base64url")

interface Respondent {
  readonly tokenHash: string
  readonly surveyId: string
}

/** The survey a page token is good for: 401 when it is malformed, forged or expired. */
const respondentOf = (token: string, now: number): Respondent => {
  const [, survey, issued, nonce, mac] = signedTokenShape.exec(token) ?? []
  if (survey === undefined || issued === undefined || nonce === undefined || mac === undefined) throw refused
  const surveyId = Buffer.from(survey, "base64url").toString("utf8")
  const issuedAt = parseInt(issued, 36)
  if (!Number.isSafeInteger(issuedAt) || issuedAt + RESPONDENT_TOKEN_HOURS * 3_600_000 <= now) throw refused
  const given = Buffer.from(mac, "base64url")
  const expected = createHmac("sha256", signingKey).update(`respondent-page\n${surveyId}\n${issuedAt}\n${nonce}`).digest()
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw refused
  return { tokenHash: hashToken(token), surveyId }
}

// --- The body (src/Http/JsonBody.ts, src/Responses/Submission.ts) --------------------------------

interface Submitted {
  readonly answers: ReadonlyArray<{ readonly questionId: string; readonly values: ReadonlyArray<string> }>
  readonly finished: boolean
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const isStrings = (value: unknown): value is ReadonlyArray<string> =>
  Array.isArray(value) && value.length <= 200 && value.every((v) => typeof v === "string" && v.length <= MAX_TEXT_LENGTH)

/** The answers of a body that has `Submission`'s shape exactly, or undefined. */
const answersOf = (answers: unknown): Submitted["answers"] | undefined => {
  if (!Array.isArray(answers) || answers.length > 500) return undefined
  const out: Array<Submitted["answers"][number]> = []
  for (const a of answers) {
    if (!isRecord(a) || Object.keys(a).length !== 2) return undefined
    const { questionId, values } = a
    if (typeof questionId !== "string" || questionId.length > 200 || !isStrings(values)) return undefined
    out.push({ questionId, values })
  }
  return out
}

/** `Submission`, checked by hand on the usual path; anything else goes through the schema for the service's error. */
const submissionOf = (body: unknown): Submitted => {
  if (isRecord(body) && Object.keys(body).every((k) => k === "answers" || k === "finished")) {
    const { answers = [], finished = false } = body
    const checked = answersOf(answers)
    if (typeof finished === "boolean" && checked !== undefined) return { answers: checked, finished }
  }
  const decoded = decodeSubmission(body)
  if (Either.isRight(decoded)) return decoded.right
  throw refusedWith(toInvalidRequest(Effect.runSync(HttpApiError.HttpApiDecodeError.fromParseError(decoded.left))))
}
const decodeSubmission = Schema.decodeUnknownEither(Submission, { errors: "all", onExcessProperty: "error" })

const readBody = async (request: Request): Promise<Submitted> => {
  const contentType = request.headers.get("content-type")
  if (contentType !== null && !isJsonContentType(contentType)) throw refusedWith(notJsonContentType(contentType))
  if (Number(request.headers.get("content-length")) > MAX_RESPONDENT_BODY_BYTES) throw refusedWith(tooLarge(MAX_RESPONDENT_BODY_BYTES))
  const body = await request.text()
  if (Buffer.byteLength(body) > MAX_RESPONDENT_BODY_BYTES) throw refusedWith(tooLarge(MAX_RESPONDENT_BODY_BYTES))
  if (exceedsJsonDepth(body)) throw refusedWith(tooDeep())
  let parsed: unknown
  try {
    parsed = JSON.parse(body)
  } catch {
    throw invalid("The request body is missing or is not valid JSON.", [{ path: "", message: "expected a JSON body" }])
  }
  return submissionOf(parsed)
}

// --- The save -----------------------------------------------------------------------------------

const storedTypes: ReadonlySet<string> = new Set(StoredQuestionType.literals)
const isStoredType = (type: string): type is StoredQuestionType => storedTypes.has(type)

const isOptions = Schema.is(Schema.Array(Schema.Struct({ value: Schema.String, label: Schema.String })))

/** The survey and its questions: the survey's row beside each of its questions (sections too). */
const surveySql = `SELECT s.workspace_id, s.status, s.trashed::int4, s.answer_layout::text,
    q.id, q.type, q.required::int4, q.allow_multiple::int4, q.options
  FROM surveys s
  LEFT JOIN questions q ON q.survey_id = s.id AND q.deleted = 0
  WHERE s.id = $1
  ORDER BY q.position, q.id`

/** The instant after `last` (ISO text, '' or null for none) for a change made at `$3`, in the service's ISO form. */
const following = (last: string) =>
  `to_char(GREATEST($3::timestamptz, NULLIF(${last}, '')::timestamptz + interval '1 millisecond') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`

/**
 * The stamp: the survey's clock row locked until COMMIT and the instant after it (and after the
 * survey's latest response), and what takes it: the new response with its rendering, its owner
 * token, its answers and the `response_changes` row. The rendering's layout tag waits for a later
 * statement: the trigger on `answers` clears a tagged rendering.
 */
const stampSql = `WITH t AS (
    INSERT INTO response_clock AS c (survey_id, last_updated_at)
    VALUES ($1, ${following("(SELECT MAX(updated_at) FROM responses WHERE survey_id = $1)")})
    ON CONFLICT (survey_id) DO UPDATE SET last_updated_at = GREATEST(excluded.last_updated_at, ${following("c.last_updated_at")})
    RETURNING c.last_updated_at AS at
  ), r AS (
    INSERT INTO responses (id, survey_id, external_user_id, completed, completed_at, created_at, updated_at, answers_json)
    SELECT $2, $1, NULL, $4::int8, CASE WHEN $4::int8 = 1 THEN t.at END, t.at, t.at, $5 FROM t
  ), o AS (
    INSERT INTO respondent_responses (response_id, token_hash) VALUES ($2, $6)
  ), a AS (
    INSERT INTO answers (response_id, question_id, value, "values")
    SELECT $2, a.question_id, a.value, a.vs FROM unnest($7::text[], $8::text[], $9::text[]) AS a (question_id, value, vs)
  )
  INSERT INTO response_changes (response_id, survey_id, changed_at) SELECT $2, $1, at FROM t RETURNING changed_at`

/**
 * The events, the rendering's tag (the survey's layout as read with the questions it was rendered
 * from), and last before COMMIT the survey's count: its row is locked only from here to COMMIT.
 */
const countSql = `WITH e AS (
    INSERT INTO events (id, type, workspace_id, survey_id, payload, created_at, response_id)
    SELECT e.id, e.type, $2, $1, e.payload, $5, $6 FROM unnest($3::text[], $4::text[], $7::text[]) AS e (id, type, payload)
  ), tagged AS (
    UPDATE responses SET answers_layout = $8::int8 WHERE id = $6
  )
  UPDATE surveys SET response_count = response_count + 1 WHERE id = $1`

const create = async (respondent: Respondent, submission: Submitted): Promise<string> => {
  const { surveyId } = respondent
  const client = await pool.connect()
  try {
    await client.query("BEGIN")
    const rows = await run(client, surveySql, [surveyId])
    const first = rows[0]
    const status = first === undefined ? "gone" : num(first[2]) !== 0 ? "gone" : text(first[1])
    if (first === undefined || status !== "published") {
      throw invalid("The survey is no longer accepting responses.", [{ path: "surveyId", message: `survey is ${status}, not published` }])
    }
    const workspaceId = text(first[0])
    const layout = text(first[3])
    const questions: Array<ValidationQuestion & { readonly position: number }> = []
    for (const row of rows) {
      if (row[4] === null) continue
      const type = text(row[5])
      const options: unknown = JSON.parse(text(row[8]))
      if (!isStoredType(type) || !isOptions(options)) throw new Error(`question ${text(row[4])}: unreadable row`)
      questions.push({ id: text(row[4]), type, required: num(row[6]) !== 0, allowMultiple: num(row[7]) !== 0, options, position: questions.length })
    }
    const { accepted, issues } = validateAnswers(questions, submission.answers)
    if (issues.length > 0) throw invalid("Some answers are not valid; nothing was saved.", issues)
    const stored: ReadonlyArray<CheckedAnswer> = accepted.filter((a) => a.values.length > 0)
    if (submission.finished) {
      const missing = missingRequired(questions, new Set(stored.map((a) => a.questionId)))
      if (missing.length > 0) throw invalid("Required questions are not answered; nothing was saved.", missing)
    }
    const responseId = makeId("rsp")
    // In question order, as the stored rendering and the response read back place them.
    const position = new Map(questions.map((q) => [q.id, q.position]))
    const answers = answersJson(
      stored.map((a) => ({
        questionId: a.questionId,
        value: storedValue(a.type, a.values),
        type: a.type,
        position: position.get(a.questionId) ?? null,
        values: a.values
      })).sort(answerOrder),
      (a) => a.values
    )
    const stamped = await run(client, stampSql, [
      surveyId,
      responseId,
      new Date().toISOString(),
      submission.finished ? 1 : 0,
      answers,
      respondent.tokenHash,
      stored.map((a) => a.questionId),
      stored.map((a) => storedValue(a.type, a.values)),
      stored.map((a) => JSON.stringify(a.values))
    ])
    const at = text(stamped[0]?.[0])
    const timestamp = new Date().toISOString()
    const response = responseJson(responseId, surveyId, null, submission.finished ? at : null, at, at, answers)
    const types = submission.finished ? ["response.created", "response.completed"] : ["response.created"]
    const ids = types.map(() => makeId("evt"))
    const payloads = types.map((type, i) =>
      `{"id":${JSON.stringify(ids[i])},"type":"${type}","timestamp":"${timestamp}","formId":${JSON.stringify(surveyId)},` +
      `"data":{"responseId":${JSON.stringify(responseId)},"externalUserId":null,"response":${response}}}`
    )
    await run(client, countSql, [surveyId, workspaceId, ids, types, timestamp, responseId, payloads, layout])
    await client.query("COMMIT")
    return responseId
  } catch (e) {
    await client.query("ROLLBACK").catch(() => undefined)
    throw e
  } finally {
    client.release()
  }
}

// --- HTTP ---------------------------------------------------------------------------------------

const requestIdPattern = /^[A-Za-z0-9._-]{8,128}$/

const answer = (status: number, body: string, requestId: string, headers: Record<string, string> = {}) =>
  new Response(body, { status, headers: { ...headers, "Content-Type": "application/json", "x-request-id": requestId } })

const bearer = (request: Request): string => {
  const header = request.headers.get("authorization") ?? ""
  return header.slice(0, 7).toLowerCase() === "bearer " ? header.slice(7).trim() : ""
}

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: Number(args.port),
  async fetch(request, listening) {
    const incoming = request.headers.get("x-request-id")
    const requestId = incoming !== null && requestIdPattern.test(incoming) ? incoming : `req_${randomBase62(16)}`
    const path = new URL(request.url).pathname
    try {
      if (path === "/healthz" && request.method === "GET") return answer(200, `{"status":"ok"}`, requestId)
      if (path !== "/respond/v1/responses" || request.method !== "POST") {
        return answer(404, JSON.stringify({ code: "not_found", message: `No route for ${request.method} ${path}.` }), requestId)
      }
      const address = addressKey(listening.requestIP(request)?.address ?? "") ?? "unknown"
      counted(admissions.address(address, Date.now()), "from this address")
      const respondent = respondentOf(bearer(request), Date.now())
      counted(admissions.survey(respondent.surveyId, address, Date.now()), "for this survey")
      const submission = await readBody(request)
      const responseId = await create(respondent, submission)
      return answer(201, JSON.stringify({ responseId }), requestId)
    } catch (e) {
      if (e instanceof Answered) return answer(e.status, e.body, requestId, e.headers)
      // A request still in flight when the process stops finds the pool ending: not an error of the baseline.
      if (stopping) return answer(503, JSON.stringify({ code: "service_unavailable", message: "The service is stopping." }), requestId)
      console.error(e)
      return answer(500, JSON.stringify({ code: "internal_error", message: "The service failed to answer this request; it has been logged." }), requestId)
    }
  }
})
let stopping = false
process.on("SIGTERM", () => {
  stopping = true
  void server.stop(true).then(() => pool.end()).finally(() => process.exit(0))
})
console.log(`PostgreSQL completions baseline listening on http://127.0.0.1:${server.port}`)
