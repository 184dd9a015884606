import type { SubscribableEventType } from "../../Domain/Event.js"
import type { QuestionType as DomainQuestionType } from "../../Domain/Question.js"
import { array, bool, type Decoder, DecodeError, literal, nullable, num, optional, str, struct } from "./decode.js"

// The console's client of the public API: every call carries the pasted key and nothing else
// (no cookie), and every answer is decoded before it is shown.

export const KeyInfo = struct({
  workspaceId: str,
  role: literal("owner", "editor", "viewer"),
  surveyIds: nullable(array(str))
})
export type KeyInfo = ReturnType<typeof KeyInfo>

export const Survey = struct({
  id: str,
  title: str,
  description: nullable(str),
  status: literal("draft", "published", "closed"),
  published: bool,
  questionCount: num,
  responseCount: num,
  createdAt: str,
  updatedAt: str
})
export type Survey = ReturnType<typeof Survey>
export const SurveyPage = struct({ data: array(Survey), nextCursor: nullable(str) })

export const questionTypes = [
  "textarea",
  "email",
  "checkbox",
  "number",
  "calendar",
  "country",
  "heatmap",
  "scale",
  "sort"
] as const satisfies ReadonlyArray<DomainQuestionType>
export type QuestionType = typeof questionTypes[number]

// The browser bundle cannot carry the service's schemas (effect): the lists above and below are
// checked against the domain's types instead, both ways.
type Unlisted<Domain, Listed> = [Exclude<Domain, Listed>] extends [never] ? true : never
const allQuestionTypes: Unlisted<DomainQuestionType, QuestionType> = true
const allEventTypes: Unlisted<SubscribableEventType, typeof eventTypes[number]> = true
export const listsComplete = allQuestionTypes && allEventTypes

/** How the console names each question type. */
export const typeLabels: Record<QuestionType, string> = {
  textarea: "Text",
  email: "Email",
  checkbox: "Choice",
  number: "Number",
  calendar: "Date",
  country: "Country",
  heatmap: "Picture click",
  scale: "Scale",
  sort: "Ranking"
}

const QuestionOption = struct({ value: str, label: str })
export const Question = struct({
  id: str,
  type: literal(...questionTypes),
  label: str,
  required: bool,
  allowMultiple: bool,
  order: num,
  options: array(QuestionOption)
})
export type Question = ReturnType<typeof Question>
export const QuestionList = struct({ data: array(Question) })

const OptionCount = struct({ value: str, label: str, count: num })
const NumericSummary = struct({
  count: num,
  mean: num,
  median: nullable(num),
  min: nullable(num),
  max: nullable(num),
  standardDeviation: nullable(num)
})
export type NumericSummary = ReturnType<typeof NumericSummary>
const RankedOption = struct({ value: str, label: str, count: num, averageRank: nullable(num) })
export const QuestionAnalytics = struct({
  id: str,
  respondentCount: num,
  skippedCount: num,
  textAnswerCount: num,
  options: array(OptionCount),
  numeric: nullable(NumericSummary),
  ranking: nullable(array(RankedOption))
})
export type QuestionAnalytics = ReturnType<typeof QuestionAnalytics>
export const Analytics = struct({
  responseCount: num,
  completedCount: num,
  incompleteCount: num,
  completionRate: nullable(num),
  questions: array(QuestionAnalytics),
  // Present when the service says that the aggregates are being rebuilt.
  stale: optional(bool)
})
export type Analytics = ReturnType<typeof Analytics>

const Answer = struct({ fieldId: nullable(str), type: nullable(str), value: str, values: array(str) })
export const ResponseItem = struct({
  id: str,
  surveyId: str,
  externalUserId: nullable(str),
  completed: bool,
  completedAt: nullable(str),
  createdAt: str,
  updatedAt: str,
  answers: array(Answer)
})
export type ResponseItem = ReturnType<typeof ResponseItem>
export const ResponsePage = struct({ data: array(ResponseItem), nextCursor: nullable(str) })

export const eventTypes = [
  "response.completed",
  "survey.published",
  "survey.closed",
  "response.created",
  "response.updated",
  "response.deleted"
] as const satisfies ReadonlyArray<SubscribableEventType>
export const WebhookSettings = struct({
  enabled: bool,
  targetUrl: nullable(str),
  events: array(str),
  disabledReason: nullable(str),
  previousSecretExpiresAt: nullable(str),
  maxAttemptsPerSecond: nullable(num)
})
export type WebhookSettings = ReturnType<typeof WebhookSettings>
export const WebhookRegistered = struct({ enabled: bool, targetUrl: str, signingSecret: str })
export const SecretRotated = struct({ secret: str, previousSecretExpiresAt: str })
export const DeliveryAttempt = struct({
  id: str,
  eventId: str,
  eventType: str,
  surveyId: nullable(str),
  ok: bool,
  responseStatus: nullable(num),
  error: nullable(str),
  attemptedAt: str
})
export type DeliveryAttempt = ReturnType<typeof DeliveryAttempt>
export const DeliveryLog = struct({ data: array(DeliveryAttempt) })
export const Redelivered = struct({ eventId: str, queued: bool })
export const Recovered = struct({ queued: num })
export const TestResult = struct({ delivered: bool })
export const EmbedSession = struct({ embedUrl: str, expiresAt: str })

export const Usage = struct({
  burstLimit: num,
  burstWindowMinutes: num,
  dailyLimit: num,
  usedToday: num,
  remainingToday: num,
  monthlyLimit: num,
  resetAt: str
})
export type Usage = ReturnType<typeof Usage>

const ErrorBody = struct({
  code: str,
  message: str,
  issues: optional(array(struct({ path: str, message: str })))
})

/** A refused call: its status and the service's error body (decisions §2). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly issues: ReadonlyArray<{ readonly path: string; readonly message: string }>
  ) {
    super(message)
  }
}

export interface Answered<T> {
  readonly body: T
  readonly etag: string | null
}

export interface CallOptions {
  readonly body?: unknown
  readonly ifMatch?: string | null
  readonly query?: Record<string, string | undefined>
}

export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE"

export const apiUrl = (path: string, query: Record<string, string | undefined> = {}) => {
  const params = new URLSearchParams()
  for (const [name, value] of Object.entries(query)) if (value !== undefined && value !== "") params.set(name, value)
  const search = params.toString()
  return `/api/v1${path}${search === "" ? "" : `?${search}`}`
}

const readJson = async (response: Response): Promise<unknown> => {
  const text = await response.text()
  if (text === "") return null
  try {
    return JSON.parse(text)
  } catch {
    throw new ApiError(response.status, "unreadable", `The service answered ${response.status} with a body that is not JSON.`, [])
  }
}

/** For answers without a body (204). */
export const noBody: Decoder<null> = () => null

/** One call with the key; throws ApiError on a refusal, DecodeError on an answer of the wrong shape. */
export const call = async <T>(
  key: string,
  method: Method,
  path: string,
  decoder: Decoder<T>,
  options: CallOptions = {}
): Promise<Answered<T>> => {
  const headers: Record<string, string> = { authorization: `Bearer ${key}`, accept: "application/json" }
  if (options.body !== undefined) headers["content-type"] = "application/json"
  if (options.ifMatch !== undefined && options.ifMatch !== null) headers["if-match"] = options.ifMatch
  const response = await fetch(apiUrl(path, options.query), {
    method,
    headers,
    credentials: "omit",
    cache: "no-store",
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) })
  })
  const body = await readJson(response)
  if (!response.ok) {
    let error: ReturnType<typeof ErrorBody>
    try {
      error = ErrorBody(body, "")
    } catch (e) {
      if (e instanceof DecodeError) throw new ApiError(response.status, "unexpected", `The service answered ${response.status}.`, [])
      throw e
    }
    throw new ApiError(response.status, error.code, error.message, error.issues ?? [])
  }
  return { body: decoder(body, ""), etag: response.headers.get("etag") }
}
