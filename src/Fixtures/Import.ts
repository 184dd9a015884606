import { Array as Arr, Clock, Effect, Either, ParseResult, Schema } from "effect"
import { questionIssues } from "../Authoring/QuestionRules.js"
import { hashToken } from "../Auth/Token.js"
import { storedValue } from "../Domain/AnswerValue.js"
import { QuestionInput, type StoredQuestionType } from "../Domain/Question.js"
import { toIso } from "../Domain/Time.js"
import { batchCommitted, type DatabaseError as SqlError, Transactions, WorkBatches } from "../Sql/Transactions.js"
import { Fixture, type FixtureInput } from "./Fixture.js"
import { ImportRepo } from "./ImportRepo.js"

export interface ImportSummary {
  readonly plans: number
  readonly accounts: number
  readonly workspaces: number
  readonly members: number
  readonly apiKeys: number
  readonly surveys: number
  readonly questions: number
  readonly responses: number
  readonly answers: number
}

/** Rows per statement of the import's lookups and inserts. */
const lookups = 400

export class FixtureInvalid extends Schema.TaggedError<FixtureInvalid>()("FixtureInvalid", {
  message: Schema.String
}) {}

const invalidFixture = (issues: ReadonlyArray<{ readonly path: string; readonly message: string }>) =>
  new FixtureInvalid({
    message: "the fixture is not valid:\n" + Arr.dedupeWith(
      issues.map((i) => `  ${i.path || "(root)"}: ${i.message}`),
      (a, b) => a === b
    ).slice(0, 50).join("\n")
  })

const decodeQuestion = Schema.decodeUnknownEither(QuestionInput, { errors: "all", onExcessProperty: "error" })

/**
 * The problems of a fixture's current questions that authoring would refuse (v1-extensions §X7),
 * so that every survey stored is one `PUT /surveys/{id}/questions` takes back as its definition
 * reads it. Deleted questions are history and are not checked.
 */
const questionProblems = (fixture: Fixture) =>
  fixture.surveys.flatMap((survey, i) =>
    survey.questions.flatMap((q, j) => {
      if (q.deleted) return []
      const at = `surveys.${i}.questions.${j}`
      const input = {
        id: q.id,
        type: q.type,
        label: q.label,
        required: q.required,
        allowMultiple: q.allowMultiple,
        options: q.options,
        settings: q.settings
      }
      return Either.match(decodeQuestion(input), {
        onLeft: (error) =>
          ParseResult.ArrayFormatter.formatErrorSync(error).map((issue) => ({
            path: [at, ...issue.path].join("."),
            message: issue.message
          })),
        onRight: (decoded) => questionIssues(decoded, at)
      })
    })
  )

/**
 * A response id given twice: the import counts each batch's responses on their surveys, so one id
 * twice would count one response twice (and its answers would be replaced by the later entry).
 */
const repeatedResponses = (fixture: Fixture) => {
  const first = new Map<string, number>()
  return fixture.responses.flatMap((response, i) => {
    const seen = first.get(response.id)
    if (seen === undefined) {
      first.set(response.id, i)
      return []
    }
    return [{ path: `responses.${i}.id`, message: `${JSON.stringify(response.id)} is already responses.${seen}` }]
  })
}

/** Decodes a fixture; the error lists every problem as `path: message`, one per line. */
export const decodeFixture = (input: unknown) =>
  Schema.decodeUnknown(Fixture, { errors: "all", onExcessProperty: "error" })(input).pipe(
    Effect.catchTag("ParseError", (error) =>
      Effect.flatMap(
        ParseResult.ArrayFormatter.formatError(error),
        (issues) => invalidFixture(issues.map((i) => ({ path: i.path.join("."), message: i.message })))
      )),
    Effect.flatMap((fixture) => {
      const problems = [...questionProblems(fixture), ...repeatedResponses(fixture)]
      return problems.length === 0 ? Effect.succeed(fixture) : Effect.fail(invalidFixture(problems))
    })
  )

/**
 * Loads a fixture, idempotent by id: rows that exist are replaced, a response's answers are
 * replaced as a whole. Importing responses emits no events.
 *
 * Everything but the responses goes in one transaction, which also checks that every response's
 * survey is stored; the responses follow in transactions of WorkBatches' `import` responses each
 * (with their answers and their surveys' counts), so that a large fixture never holds the database
 * for long. A fixture refused by the first transaction changes nothing; an import stopped later
 * keeps the batches it committed, and importing the same fixture again completes it.
 */
export const importFixture = Effect.fn("Fixtures.import")(function*(fixture: Fixture) {
  const transactions = yield* Transactions
  const repo = yield* ImportRepo
  const { import: batch } = yield* WorkBatches
  const now = toIso(yield* Clock.currentTimeMillis)

  const structure = Effect.gen(function*() {
    for (const p of fixture.plans) yield* repo.plan(p)
    for (const a of fixture.accounts) yield* repo.account(a)
    for (const w of fixture.workspaces) yield* repo.workspace(w)
    for (const m of fixture.members) yield* repo.member(m)
    for (const k of fixture.apiKeys) yield* repo.apiKey(k, hashToken(k.token), now)

    let questions = 0
    const types = new Map<string, Map<string, StoredQuestionType>>()
    for (const s of fixture.surveys) {
      yield* repo.survey(s)
      const surveyTypes = new Map<string, StoredQuestionType>()
      types.set(s.id, surveyTypes)
      for (const q of s.questions) {
        surveyTypes.set(q.id, q.type)
        questions++
        yield* repo.question(s.id, q)
      }
    }
    for (const ids of Arr.chunksOf(fixture.surveys.map((s) => s.id), lookups)) yield* repo.recountQuestions(ids)

    // Surveys that the fixture answers but does not define: they must be stored, with their questions' types.
    const missing = Arr.dedupe(fixture.responses.map((r) => r.surveyId)).filter((id) => !types.has(id))
    for (const ids of Arr.chunksOf(missing, lookups)) {
      const stored = new Set(yield* repo.storedSurveys(ids))
      const dangling = ids.filter((id) => !stored.has(id))
      if (dangling.length > 0) {
        return yield* new FixtureInvalid({
          message: `the fixture could not be stored (nothing was imported): responses of surveys that do not exist: ${
            dangling.slice(0, 10).join(", ")
          }`
        })
      }
      for (const row of yield* repo.questionTypes(ids)) {
        const map = types.get(row.surveyId) ?? new Map<string, StoredQuestionType>()
        map.set(row.id, row.type)
        types.set(row.surveyId, map)
      }
    }
    return { questions, types }
  })

  const responses = (chunk: ReadonlyArray<Fixture["responses"][number]>, types: Map<string, Map<string, StoredQuestionType>>) =>
    Effect.gen(function*() {
      // The surveys' counts move by what this batch adds and moves, so that they are right at every commit.
      const counts = new Map<string, number>()
      const add = (surveyId: string, delta: number) => counts.set(surveyId, (counts.get(surveyId) ?? 0) + delta)
      for (const row of yield* repo.storedResponses(chunk.map((r) => r.id))) add(row.surveyId, -1)
      for (const r of chunk) add(r.surveyId, 1)
      yield* repo.responses(chunk, now)
      const rows = chunk.flatMap((r) =>
        r.answers.filter((a) => a.values.length > 0).map((a) => ({
          responseId: r.id,
          questionId: a.questionId,
          value: storedValue(types.get(r.surveyId)?.get(a.questionId) ?? null, a.values),
          values: JSON.stringify(a.values)
        }))
      )
      for (const part of Arr.chunksOf(rows, lookups)) yield* repo.answers(part)
      yield* repo.refreshDocuments(chunk.map((r) => r.id))
      for (const [surveyId, delta] of counts) if (delta !== 0) yield* repo.addResponseCount(surveyId, delta)
      return rows.length
    })

  /** A statement refused by the database; `whole` when that refused the fixture before anything was stored. */
  const refused = (error: SqlError, whole: boolean) =>
    new FixtureInvalid({
      message: `the fixture could not be stored${whole ? " (nothing was imported)" : ""}: ${
        error.cause instanceof Error ? error.cause.message : error.message
      }`
    })

  const { questions, types } = yield* transactions.within(structure).pipe(
    Effect.catchTag("SqlError", (error) => refused(error, true))
  )
  let answers = 0
  for (const chunk of Arr.chunksOf(fixture.responses, batch)) {
    answers += yield* transactions.within(responses(chunk, types)).pipe(Effect.catchTag("SqlError", (error) => refused(error, false)))
    yield* batchCommitted("import")
  }

  return {
    plans: fixture.plans.length,
    accounts: fixture.accounts.length,
    workspaces: fixture.workspaces.length,
    members: fixture.members.length,
    apiKeys: fixture.apiKeys.length,
    surveys: fixture.surveys.length,
    questions,
    responses: fixture.responses.length,
    answers
  } satisfies ImportSummary
}, Effect.provide(ImportRepo.Default))

export const importFixtureInput = (input: FixtureInput | unknown) =>
  Effect.flatMap(decodeFixture(input), importFixture)
