import { Either } from "effect"
import type { Issue } from "../Domain/Errors.js"
import { makeId } from "../Domain/Ids.js"
import type { QuestionInput, StoredQuestionType } from "../Domain/Question.js"
import type { QuestionWrite } from "./AuthoringRepo.js"

const withOptions: ReadonlySet<StoredQuestionType> = new Set(["checkbox", "scale", "sort"])

const integer = /^-?\d+$/

/** The issues of one question beyond its shape (the schema checked that), at `questions.N…`. */
export const questionIssues = (q: QuestionInput, at: string): Array<Issue> => {
  const issues: Array<Issue> = []
  if (q.allowMultiple === true && q.type !== "checkbox") {
    issues.push({ path: `${at}.allowMultiple`, message: "only a checkbox question allows multiple answers" })
  }
  const options = q.options ?? []
  if (withOptions.has(q.type)) {
    if (options.length === 0) issues.push({ path: `${at}.options`, message: `a ${q.type} question needs options` })
    const seen = new Set<string>()
    options.forEach((option, j) => {
      if (seen.has(option.value)) {
        issues.push({ path: `${at}.options.${j}.value`, message: "the same value as an option before it" })
      }
      seen.add(option.value)
      if (q.type === "scale" && !integer.test(option.value)) {
        issues.push({ path: `${at}.options.${j}.value`, message: "a scale's values are integers" })
      }
    })
  } else if (options.length > 0) {
    issues.push({ path: `${at}.options`, message: "only checkbox, scale and sort questions have options" })
  }
  if (q.settings?.imageUrl !== undefined && q.type !== "heatmap") {
    issues.push({ path: `${at}.settings.imageUrl`, message: "only a heatmap question has an image" })
  }
  if (q.settings?.optionType !== undefined && q.type !== "checkbox") {
    issues.push({ path: `${at}.settings.optionType`, message: "only a checkbox question has an option type" })
  }
  return issues
}

/**
 * A question list as it will be stored (v1-extensions §X7): ids given or generated, defaults
 * filled in, positions from the list's order; or every issue found, each at its path under
 * `prefix` (`questions`).
 */
export const questionWrites = (
  inputs: ReadonlyArray<QuestionInput>,
  prefix = "questions"
): Either.Either<ReadonlyArray<QuestionWrite>, ReadonlyArray<Issue>> => {
  const issues: Array<Issue> = []
  const firstAt = new Map<string, number>()
  inputs.forEach((q, i) => {
    const at = `${prefix}.${i}`
    if (q.id !== undefined) {
      const before = firstAt.get(q.id)
      if (before !== undefined) issues.push({ path: `${at}.id`, message: `the same id as ${prefix}.${before}` })
      else firstAt.set(q.id, i)
    }
    issues.push(...questionIssues(q, at))
  })
  if (issues.length > 0) return Either.left(issues)
  return Either.right(inputs.map((q, i): QuestionWrite => {
    const settings: Record<string, string> = {}
    if (q.settings?.imageUrl !== undefined) settings["imageUrl"] = q.settings.imageUrl
    if (q.settings?.optionType !== undefined) settings["optionType"] = q.settings.optionType
    return {
      id: q.id ?? makeId("q"),
      type: q.type,
      label: q.label,
      required: q.required ?? false,
      allowMultiple: q.allowMultiple ?? false,
      position: i + 1,
      options: (q.options ?? []).map((o) => ({ value: o.value, label: o.label ?? o.value })),
      settings
    }
  }))
}
