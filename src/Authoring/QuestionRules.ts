import { Effect, Either, ParseResult, Schema } from "effect"
import * as AST from "effect/SchemaAST"
import type { Issue } from "../Domain/Errors.js"
import { makeId } from "../Domain/Ids.js"
import {
  MAX_QUESTIONS,
  QuestionInput,
  QuestionInputList as QuestionInputListShape,
  type StoredQuestionType
} from "../Domain/Question.js"
import type { QuestionWrite } from "./AuthoringRepo.js"

const withOptions: ReadonlySet<StoredQuestionType> = new Set(["checkbox", "scale", "sort"])

const integer = /^-?\d+$/

/** A problem beyond a value's shape, at a path relative to what was checked. */
interface Problem {
  readonly path: readonly [string | number, ...Array<string | number>]
  readonly message: string
}

/** The problems of one question beyond its shape (the schema checked that), relative to the question. */
const questionProblems = (q: QuestionInput): Array<Problem> => {
  const problems: Array<Problem> = []
  if (q.allowMultiple === true && q.type !== "checkbox") {
    problems.push({ path: ["allowMultiple"], message: "only a checkbox question allows multiple answers" })
  }
  const options = q.options ?? []
  if (withOptions.has(q.type)) {
    if (options.length === 0) problems.push({ path: ["options"], message: `a ${q.type} question needs options` })
    const seen = new Set<string>()
    options.forEach((option, j) => {
      if (seen.has(option.value)) {
        problems.push({ path: ["options", j, "value"], message: "the same value as an option before it" })
      }
      seen.add(option.value)
      if (q.type === "scale" && !integer.test(option.value)) {
        problems.push({ path: ["options", j, "value"], message: "a scale's values are integers" })
      }
    })
  } else if (options.length > 0) {
    problems.push({ path: ["options"], message: "only checkbox, scale and sort questions have options" })
  }
  if (q.settings?.imageUrl !== undefined && q.type !== "heatmap") {
    problems.push({ path: ["settings", "imageUrl"], message: "only a heatmap question has an image" })
  }
  if (q.settings?.optionType !== undefined && q.type !== "checkbox") {
    problems.push({ path: ["settings", "optionType"], message: "only a checkbox question has an option type" })
  }
  return problems
}

/** The issues of one question beyond its shape (the schema checked that), at `at` (`questions.N`). */
export const questionIssues = (q: QuestionInput, at: string): Array<Issue> =>
  questionProblems(q).map((problem) => ({ path: [at, ...problem.path].join("."), message: problem.message }))

/**
 * The problems of the questions of a list that have their shape, each with its position in the
 * list: their own, and an id given twice (at the later one). Positions may skip the questions
 * that did not decode, whose ids are then not known.
 */
const listProblems = (questions: ReadonlyArray<readonly [number, QuestionInput]>, prefix: string): Array<Problem> => {
  const problems: Array<Problem> = []
  const firstAt = new Map<string, number>()
  for (const [i, q] of questions) {
    if (q.id !== undefined) {
      const before = firstAt.get(q.id)
      if (before !== undefined) problems.push({ path: [i, "id"], message: `the same id as ${prefix}.${before}` })
      else firstAt.set(q.id, i)
    }
    for (const problem of questionProblems(q)) problems.push({ path: [i, ...problem.path], message: problem.message })
  }
  return problems
}

/**
 * A question list as authoring takes it (v1-extensions §X7), checked in one pass: every question's
 * shape, and the rules beyond it (ids given once, options where the type has them, settings of
 * the type) over every question whose shape is right, so that one answer lists every problem of
 * the body. The OpenAPI document declares it as the list of `QuestionInput` it is.
 */
export const QuestionInputList = Schema.declare(
  [QuestionInput],
  {
    decode: (item) => (input, options, ast) =>
      Effect.gen(function*() {
        if (!Array.isArray(input)) return yield* Effect.fail(new ParseResult.Type(ast, input, "must be a list"))
        if (input.length > MAX_QUESTIONS) {
          return yield* Effect.fail(new ParseResult.Type(ast, input, `at most ${MAX_QUESTIONS} questions`))
        }
        const all = options?.errors === "all"
        const decodeItem = ParseResult.decodeUnknown(item)
        const decoded: Array<readonly [number, QuestionInput]> = []
        const issues: Array<ParseResult.ParseIssue> = []
        for (let i = 0; i < input.length; i++) {
          const result = yield* Effect.either(decodeItem(input[i], options))
          if (Either.isRight(result)) {
            decoded.push([i, result.right])
          } else {
            issues.push(new ParseResult.Pointer(i, input, result.left))
            if (!all) break
          }
        }
        for (const problem of listProblems(decoded, "questions")) {
          issues.push(new ParseResult.Pointer(problem.path, input, new ParseResult.Type(ast, input, problem.message)))
        }
        const [first, ...rest] = issues
        const questions: ReadonlyArray<QuestionInput> = decoded.map(([, q]) => q)
        if (first === undefined) return questions
        return yield* Effect.fail(new ParseResult.Composite(ast, input, [first, ...rest]))
      }),
    encode: (item) => (input, options) => ParseResult.encodeUnknown(Schema.Array(item))(input, options)
  },
  { [AST.SurrogateAnnotationId]: QuestionInputListShape.ast }
)

/**
 * A question list as it will be stored (v1-extensions §X7): ids given or generated, defaults
 * filled in, positions from the list's order; or every issue found, each at its path under
 * `prefix` (`questions`).
 */
export const questionWrites = (
  inputs: ReadonlyArray<QuestionInput>,
  prefix = "questions"
): Either.Either<ReadonlyArray<QuestionWrite>, ReadonlyArray<Issue>> => {
  const problems = listProblems(inputs.map((q, i) => [i, q] as const), prefix)
  if (problems.length > 0) {
    return Either.left(problems.map((problem) => ({ path: [prefix, ...problem.path].join("."), message: problem.message })))
  }
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
