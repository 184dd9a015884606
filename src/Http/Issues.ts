import { InvalidRequest, type Issue, MAX_ISSUE_MESSAGE_LENGTH, MAX_ISSUES } from "../Domain/Errors.js"

export { MAX_ISSUES }

/** One problem as Effect's `ArrayFormatter` reports it: a union reports one per member. */
export interface RawIssue {
  readonly _tag: string
  readonly path: ReadonlyArray<PropertyKey>
  readonly message: string
}

const MAX_MESSAGE = MAX_ISSUE_MESSAGE_LENGTH

const pathOf = (path: ReadonlyArray<PropertyKey>) => path.map(String).join(".")

const expected = /^Expected (.+), actual (.+)$/s

/** What a value was, for a message: short, one line. */
const shown = (actual: string) => {
  const line = actual.replace(/\s+/g, " ")
  return line.length > 60 ? `${line.slice(0, 57)}…` : line
}

/** `Expected "a"` of a literal member: its text, or none when the member is not a literal. */
const literalOf = (what: string): string | undefined => {
  if (!what.startsWith("\"") || !what.endsWith("\"")) return undefined
  try {
    const parsed: unknown = JSON.parse(what)
    return typeof parsed === "string" ? parsed : undefined
  } catch {
    return undefined
  }
}

/** The default wordings of Effect's schemas, as sentences a person can act on. */
const rewordings: ReadonlyArray<readonly [RegExp, (...groups: Array<string>) => string]> = [
  [/^a string at least 1 character\(s\) long$/, () => "must not be empty"],
  [/^a string at least (\d+) character\(s\) long$/, (n = "") => `must be at least ${n} characters long`],
  [/^a string at most (\d+) character\(s\) long$/, (n = "") => `must be at most ${n} characters long`],
  [/^an array of at least 1 item\(s\)$/, () => "must hold at least one item"],
  [/^an array of at least (\d+) item\(s\)$/, (n = "") => `must hold at least ${n} items`],
  [/^an array of at most (\d+) item\(s\)$/, (n = "") => `must hold at most ${n} items`],
  [/^a number between (\S+) and (\S+)$/, (a = "", b = "") => `must be a number from ${a} to ${b}`],
  [/^a number greater than or equal to (\S+)$/, (a = "") => `must be a number of at least ${a}`],
  [/^a number less than or equal to (\S+)$/, (a = "") => `must be a number of at most ${a}`],
  [/^a positive number$/, () => "must be a number above 0"],
  [/^a non-negative number$/, () => "must be a number of at least 0"],
  [/^an integer$/, () => "must be an integer"],
  [/^string$/, () => "must be a string"],
  [/^number$/, () => "must be a number"],
  [/^boolean$/, () => "must be true or false"],
  [/^null$/, () => "must be null"],
  [/^an? (?:object|{.*})$/s, () => "must be an object"],
  [/^ReadonlyArray<.*>$|^readonly \[.*\]$|^an array.*$/s, () => "must be a list"]
]

/**
 * One issue's message as a sentence: `Expected <what>, actual <value>` becomes what the value must
 * be and what it was; the service's own messages pass as they are.
 */
const reword = (issue: RawIssue): string => {
  if (issue._tag === "Missing") return "is required"
  if (issue._tag === "Unexpected") {
    const known = /expected: (.+)$/.exec(issue.message)?.[1]
    const names = known?.split(" | ").map((name) => literalOf(name) ?? name)
    return names === undefined ? "is not a field of this body" : `is not a field here; the fields are ${names.join(", ")}`
  }
  const match = expected.exec(issue.message)
  if (match === null) return issue.message
  const [, what = "", actual = ""] = match
  // Every body of the API is an object.
  if (issue.path.length === 0) return `the body must be a JSON object (got ${shown(actual)})`
  for (const [pattern, sentence] of rewordings) {
    const found = pattern.exec(what)
    if (found !== null) return `${sentence(...found.slice(1))} (got ${shown(actual)})`
  }
  const literal = literalOf(what)
  if (literal !== undefined) return `must be ${JSON.stringify(literal)} (got ${shown(actual)})`
  // A description in place of the default expectation: it says what the value must fit.
  return `does not fit: ${what.replace(/\.$/, "")} (got ${shown(actual)})`
}

/** The members of an optional or nullable field that say only "not undefined" or "not null". */
const onlyAbsence = (issue: RawIssue) => /^Expected (undefined|null), actual /s.test(issue.message)

/**
 * The issues of a decode failure as the error body lists them (decisions §2): one per problem,
 * at most `MAX_ISSUES`, each a sentence. The members of a union that failed at one path are one
 * problem: a union of literals names every value it takes (`must be one of textarea, email, …`),
 * and the "not undefined" and "not null" of an optional or nullable field are left out when the
 * field's own type says more.
 */
export const wordIssues = (raw: ReadonlyArray<RawIssue>): ReadonlyArray<Issue> => {
  const byPath = new Map<string, Array<RawIssue>>()
  for (const found of raw) {
    // A non-empty list given empty misses its first item: the list is at fault.
    const issue = found._tag === "Missing" && found.path[found.path.length - 1] === 0
      ? { _tag: "Type", path: found.path.slice(0, -1), message: "must hold at least one item" }
      : found
    const path = pathOf(issue.path)
    const at = byPath.get(path)
    if (at === undefined) byPath.set(path, [issue])
    else at.push(issue)
  }
  // The paths that a deeper path's issue explains: every proper prefix of an issue's path.
  const explained = new Set<string>()
  for (const path of byPath.keys()) {
    for (let end = path.lastIndexOf("."); end > 0; end = path.lastIndexOf(".", end - 1)) explained.add(path.slice(0, end))
  }
  const issues: Array<Issue> = []
  for (const [path, all] of byPath) {
    const telling = all.some((issue) => !onlyAbsence(issue)) ? all.filter((issue) => !onlyAbsence(issue)) : all
    // A deeper path explains this one (an element of a list that is not a list of nothing).
    if (telling.every(onlyAbsence) && explained.has(path)) continue
    const literals = telling.map((issue) => {
      const match = expected.exec(issue.message)
      return match === null ? undefined : { value: literalOf(match[1] ?? ""), actual: match[2] ?? "" }
    })
    const messages = literals.length > 1 && literals.every((l) => l?.value !== undefined)
      ? [`must be one of ${literals.map((l) => l?.value).join(", ")} (got ${shown(literals[0]?.actual ?? "")})`]
      : [...new Set(telling.map(reword))]
    for (const message of messages) issues.push({ path, message: message.slice(0, MAX_MESSAGE) })
  }
  return issues
}

const isIndex = /^\d+$/

/** Paths in document order: segment by segment, list positions as numbers (`questions.2` before `questions.10`). */
const byPath = (a: Issue, b: Issue): number => {
  const left = a.path === "" ? [] : a.path.split(".")
  const right = b.path === "" ? [] : b.path.split(".")
  for (let i = 0; i < Math.min(left.length, right.length); i++) {
    const x = left[i] ?? ""
    const y = right[i] ?? ""
    if (x === y) continue
    if (isIndex.test(x) && isIndex.test(y)) return Number(x) - Number(y)
    return x < y ? -1 : 1
  }
  return left.length - right.length
}

/**
 * The `invalid_request` of a body's problems: every issue up to the cap, ordered by path, the
 * message naming the first and how many there are.
 */
export const invalidRequestOf = (found: ReadonlyArray<Issue>): InvalidRequest => {
  // A stable sort: the problems of one path stay in the order they were found.
  const all = [...found].sort(byPath)
  const issues = all.slice(0, MAX_ISSUES)
  const first = issues[0]
  if (first === undefined) return new InvalidRequest({ message: "The request is malformed.", issues })
  const where = first.path === "" ? "request" : `\`${first.path}\``
  const more = all.length - 1
  const rest = more === 0
    ? ""
    : ` (${more} more problem${more === 1 ? "" : "s"}${all.length > MAX_ISSUES ? `; the first ${MAX_ISSUES} are listed` : ""} in \`issues\`)`
  return new InvalidRequest({ message: `Invalid ${where}: ${first.message}.${rest}`, issues })
}
