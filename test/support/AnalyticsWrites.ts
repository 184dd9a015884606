import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { Aggregator } from "../../src/Analytics/Aggregator.js"
import { storedValue } from "../../src/Domain/AnswerValue.js"
import type { StoredQuestionType } from "../../src/Domain/Question.js"

export interface WrittenAnswer {
  readonly questionId: string
  readonly values: ReadonlyArray<string>
}

/**
 * Writes a response and its whole answer set the way the service's writers do: the response row,
 * its answers replaced, and a `response_changes` row, in one transaction.
 */
export const writeResponse = (input: {
  readonly id: string
  readonly surveyId: string
  readonly completed: boolean
  readonly createdAt: string
  readonly answers: ReadonlyArray<WrittenAnswer>
  readonly types?: ReadonlyMap<string, StoredQuestionType>
}) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql.withTransaction(Effect.gen(function*() {
      yield* sql`INSERT INTO responses (id, survey_id, external_user_id, completed, completed_at, created_at, updated_at)
        VALUES (${input.id}, ${input.surveyId}, NULL, ${input.completed ? 1 : 0},
                ${input.completed ? input.createdAt : null}, ${input.createdAt}, ${input.createdAt})
        ON CONFLICT (id) DO UPDATE SET completed = excluded.completed, completed_at = excluded.completed_at,
          updated_at = excluded.updated_at`
      yield* sql`DELETE FROM answers WHERE response_id = ${input.id}`
      for (const a of input.answers) {
        yield* sql`INSERT INTO answers (response_id, question_id, value, "values") VALUES (${input.id}, ${a.questionId},
          ${storedValue(input.types?.get(a.questionId) ?? null, a.values)}, ${JSON.stringify(a.values)})`
      }
      yield* sql`INSERT INTO response_changes (response_id, survey_id, changed_at)
        VALUES (${input.id}, ${input.surveyId}, ${input.createdAt})`
    }))
  }).pipe(Effect.orDie)

/**
 * Runs the aggregator by hand to where its background loop would come to rest: the change log
 * applied, every rebuild under way finished batch by batch, and the changes made meanwhile applied.
 * Bounded: a test's data is rebuilt in far fewer rounds.
 */
export const settleAnalytics = Effect.gen(function*() {
  const aggregator = yield* Aggregator
  yield* aggregator.catchUp()
  for (let round = 0; round < 1000; round++) {
    if ((yield* aggregator.rebuildRound()) === 0) break
  }
  yield* aggregator.catchUp()
})
