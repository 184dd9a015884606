import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"

const Stored = Schema.Struct({
  answersJson: Schema.NullOr(Schema.String),
  current: Schema.Number
})

/**
 * A response's stored rendering of its answers (`responses.answers_json`) and whether it is
 * current, i.e. tagged with its survey's answer_layout (src/Responses/AnswerDocumentRepo.ts).
 */
export const storedRendering = (responseId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql`SELECT r.answers_json, CASE WHEN r.answers_layout = s.answer_layout THEN 1 ELSE 0 END AS current
      FROM responses r JOIN surveys s ON s.id = r.survey_id WHERE r.id = ${responseId}`
    const row = rows[0]
    if (row === undefined) return yield* Effect.dieMessage(`no response ${responseId}`)
    return Schema.decodeUnknownSync(Stored)(row)
  }).pipe(Effect.orDie)
