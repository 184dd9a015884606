import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { AggregateRepo } from "../src/Analytics/AggregateRepo.js"
import { Aggregator } from "../src/Analytics/Aggregator.js"
import { seedDemo } from "../src/Demo/Seed.js"
import { expectClose, oracle } from "./support/AnalyticsOracle.js"
import { clientFor } from "./support/ApiClient.js"
import { TestServer } from "./support/TestServer.js"
import { SurveyId } from "../src/Domain/Ids.js"

const Ids = Schema.Array(Schema.Struct({ id: SurveyId }))
const Rows = Schema.Array(Schema.Struct({ id: Schema.String, completed: Schema.Number }))
const AnswerRows = Schema.Array(Schema.Struct({
  responseId: Schema.String,
  questionId: Schema.String,
  values: Schema.parseJson(Schema.Array(Schema.String))
}))

layer(TestServer())(
  "the demo workspace's analytics",
  (it) => {
    it.effect("match the figures computed by definition from its responses", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const repo = yield* AggregateRepo
        const { editorToken } = yield* seedDemo()
        const api = yield* clientFor(editorToken)
        yield* Effect.flatMap(Aggregator, (a) => a.catchUp())
        const surveys = yield* sql`SELECT id FROM surveys WHERE trashed = 0 ORDER BY id`.pipe(
          Effect.flatMap(Schema.decodeUnknown(Ids))
        )
        let responsesSeen = 0
        for (const { id } of surveys) {
          const rows = yield* sql`SELECT id, completed FROM responses WHERE survey_id = ${id}`.pipe(
            Effect.flatMap(Schema.decodeUnknown(Rows))
          )
          const answers = yield* sql`SELECT a.response_id, a.question_id, a."values" FROM answers a
            JOIN responses r ON r.id = a.response_id WHERE r.survey_id = ${id}`.pipe(
            Effect.flatMap(Schema.decodeUnknown(AnswerRows))
          )
          const responses = rows.map((r) => ({
            completed: r.completed === 1,
            answers: answers.filter((a) => a.responseId === r.id)
          }))
          responsesSeen += responses.length
          const analytics = yield* api.analytics.get({ path: { id } })
          expectClose(analytics, oracle(yield* repo.questionsOf(id), responses))
        }
        expect(responsesSeen).toBeGreaterThan(100)
      }))
  }
)
