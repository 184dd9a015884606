import type { Issue } from "../Domain/Errors.js"
import type { QuestionOption, QuestionType, StoredQuestionType } from "../Domain/Question.js"
import { countryCodes } from "../Domain/Countries.js"
import { MAX_TEXT_LENGTH } from "../Domain/Response.js"
import type { SubmittedAnswer } from "./Submission.js"

/** What validation needs to know about a question. */
export interface ValidationQuestion {
  readonly id: string
  readonly type: StoredQuestionType
  readonly required: boolean
  readonly allowMultiple: boolean
  readonly options: ReadonlyArray<QuestionOption>
}

/** A validated answer in its stored form; empty `values` clears the answer (the question is skipped). */
export interface CheckedAnswer {
  readonly questionId: string
  readonly type: QuestionType
  readonly values: ReadonlyArray<string>
}

type Outcome = { readonly ok: true; readonly values: ReadonlyArray<string> } | { readonly ok: false; readonly message: string }

const ok = (values: ReadonlyArray<string>): Outcome => ({ ok: true, values })
const fail = (message: string): Outcome => ({ ok: false, message })

const decimalPattern = /^(-)?(\d{1,30})(?:\.(\d{1,15}))?$/

/** `007.50` → `7.5`, `-0` → `0`: the decimal as entered, without redundant zeros. */
export const normaliseDecimal = (input: string): string | undefined => {
  const match = decimalPattern.exec(input)
  if (match === null) return undefined
  const integer = (match[2] ?? "0").replace(/^0+(?=\d)/, "")
  const fraction = (match[3] ?? "").replace(/0+$/, "")
  const digits = fraction === "" ? integer : `${integer}.${fraction}`
  return match[1] === "-" && /[1-9]/.test(digits) ? `-${digits}` : digits
}

const unitPattern = /^(?:0(?:\.\d{1,4})?|1(?:\.0{1,4})?)$/

/** A heatmap point `x,y`, each a decimal in 0..1 with at most 4 places. */
export const normalisePoint = (input: string): string | undefined => {
  const parts = input.split(",")
  if (parts.length !== 2) return undefined
  const coordinates: Array<string> = []
  for (const part of parts) {
    if (!unitPattern.test(part)) return undefined
    const normalised = normaliseDecimal(part)
    if (normalised === undefined) return undefined
    coordinates.push(normalised)
  }
  return coordinates.join(",")
}

const datePattern = /^(\d{4})-(\d{2})-(\d{2})$/

/** A real calendar day `YYYY-MM-DD`. */
export const isCalendarDate = (input: string): boolean => {
  const match = datePattern.exec(input)
  if (match === null) return false
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])]
  // setUTCFullYear, not Date.UTC: the latter maps years 0 to 99 onto 1900 to 1999.
  const date = new Date(0)
  date.setUTCFullYear(year, month - 1, day)
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day
}

// The HTML living standard's "valid e-mail address", with at least one dot in the domain.
const emailPattern =
  /^[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)+$/

export const isEmail = (input: string): boolean =>
  input.length <= 254 && emailPattern.test(input) && (input.split("@")[0] ?? "").length <= 64

const single = (values: ReadonlyArray<string>, check: (value: string) => Outcome): Outcome => {
  if (values.length !== 1) return fail("expected exactly one value")
  const [value] = values
  return value === undefined ? fail("expected exactly one value") : check(value)
}

const choices = (question: ValidationQuestion, values: ReadonlyArray<string>, what: string): Outcome => {
  const known = new Set(question.options.map((o) => o.value))
  const seen = new Set<string>()
  for (const value of values) {
    if (!known.has(value)) return fail(`${JSON.stringify(value.slice(0, 64))} is not an option of this question`)
    if (seen.has(value)) return fail(`${JSON.stringify(value.slice(0, 64))} is ${what} more than once`)
    seen.add(value)
  }
  return ok(values)
}

/** Checks one answer's values against its question (decisions §4) and returns them in stored form. */
export const checkValues = (question: ValidationQuestion, values: ReadonlyArray<string>): Outcome => {
  if (values.length === 0) return ok([])
  if (values.some((v) => v.length > MAX_TEXT_LENGTH)) return fail(`a value is longer than ${MAX_TEXT_LENGTH} characters`)
  switch (question.type) {
    case "section":
      return fail("this is a section heading, not a question")
    case "textarea":
      return single(values, (v) => v.trim() === "" ? fail("the text is empty; send no values to skip") : ok([v]))
    case "email":
      return single(values, (v) => {
        const address = v.trim()
        return isEmail(address) ? ok([address]) : fail("expected an email address like name@example.com")
      })
    case "number":
      return single(values, (v) => {
        const normalised = normaliseDecimal(v.trim())
        return normalised === undefined ? fail("expected a decimal number like 42 or -3.5") : ok([normalised])
      })
    case "calendar":
      return single(values, (v) => isCalendarDate(v) ? ok([v]) : fail("expected a date as YYYY-MM-DD"))
    case "country":
      return single(values, (v) => {
        const code = v.trim().toUpperCase()
        return countryCodes.has(code) ? ok([code]) : fail("expected an ISO 3166-1 alpha-2 country code like DE")
      })
    case "scale":
      return single(values, (v) => choices(question, [v], "chosen"))
    case "heatmap":
      return single(values, (v) => {
        const point = normalisePoint(v.trim())
        return point === undefined ? fail("expected a point x,y with each a decimal in 0..1, at most 4 places") : ok([point])
      })
    case "checkbox":
      if (!question.allowMultiple && values.length > 1) return fail("only one option may be selected")
      return choices(question, values, "selected")
    case "sort":
      return choices(question, values, "ranked")
  }
}

/**
 * Validates a set of submitted answers against the survey's questions. Every problem is
 * reported with its body path; nothing is accepted unless there are no problems.
 */
export const validateAnswers = (
  questions: ReadonlyArray<ValidationQuestion>,
  answers: ReadonlyArray<SubmittedAnswer>
): { readonly accepted: ReadonlyArray<CheckedAnswer>; readonly issues: ReadonlyArray<Issue> } => {
  const byId = new Map(questions.map((q) => [q.id, q]))
  const seen = new Set<string>()
  const accepted: Array<CheckedAnswer> = []
  const issues: Array<Issue> = []
  answers.forEach((answer, index) => {
    const question = byId.get(answer.questionId)
    if (question === undefined) {
      issues.push({ path: `answers.${index}.questionId`, message: "not a question of this survey" })
      return
    }
    if (seen.has(answer.questionId)) {
      issues.push({ path: `answers.${index}.questionId`, message: "this question is answered twice in one request" })
      return
    }
    seen.add(answer.questionId)
    const outcome = checkValues(question, answer.values)
    if (!outcome.ok) issues.push({ path: `answers.${index}.values`, message: outcome.message })
    else if (question.type !== "section") accepted.push({ questionId: question.id, type: question.type, values: outcome.values })
  })
  return issues.length > 0 ? { accepted: [], issues } : { accepted, issues }
}

/** Required questions without an answer, reported when a response is finished. */
export const missingRequired = (
  questions: ReadonlyArray<ValidationQuestion>,
  answered: ReadonlySet<string>
): ReadonlyArray<Issue> =>
  questions
    .filter((q) => q.type !== "section" && q.required && !answered.has(q.id))
    .map((q) => ({ path: `questions.${q.id}`, message: "this question is required" }))
