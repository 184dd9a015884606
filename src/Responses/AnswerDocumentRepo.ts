import type { SqlClient } from "@effect/sql"
import { Array as Arr, Effect, Schema } from "effect"
import { AnswerColumns, type AnswerRow, answersOfResponsesIn } from "./AnswerSql.js"
import { answersByResponse, answersJson } from "./AnswerWire.js"

/**
 * Each response row carries its answers rendered in wire form (`responses.answers_json`, the JSON
 * text of the API's `answers` array), so that a page of responses is one range read of the
 * responses table, clustered by `(survey_id, created_at, id)`, with no answer rows to gather.
 *
 * The rendering depends on the survey's questions as they are at write time (order, types,
 * deletions), so it is tagged with the survey's `answer_layout`, a counter that triggers on
 * `questions` move on every change that affects it (migration 0009). A rendering is used only
 * while its tag equals the survey's counter; otherwise the read path assembles the answers
 * from the `answers` rows, as it always could. Triggers on `answers` clear the rendering of a
 * response whenever any of its answers changes, whoever writes (the service, the CLI, `sqlite3` by
 * hand), so a stale rendering is never served; the writers then render again in the same
 * transaction with `refreshAnswerDocuments` (a respondent's save with its stamps, `answerDocument`).
 *
 * The `answers` table stays the record of what was answered (analytics, the CSV export and
 * `GET /responses/{id}` read it); `answers_json` is a copy of the same answer text in the
 * response's own row, gone when the row is deleted.
 *
 * Measured shortcut: a page reads each response's stored rendering, skipping the gathering of its
 * answer rows. The layout tag and the triggers above keep a stale rendering from being served
 * (test/AnswerDocuments.test.ts). Measurement: docs/performance.md#measured-shortcuts, "Stored
 * renderings of answers".
 */

const isValues = Schema.is(Schema.Array(Schema.String))

/** An answer's stored `values` JSON, checked to be a list of strings. */
export const parseStoredValues = (where: string, json: string): ReadonlyArray<string> => {
  const parsed: unknown = JSON.parse(json)
  if (!isValues(parsed)) throw new Error(`answer ${where}: stored values are not a list`)
  return parsed
}

const batch = 400

/**
 * The `answers_json` of response `id` from `answers`, all of its answer rows as read in the
 * transaction that wrote them (with their questions as they are now): what
 * `refreshAnswerDocuments` stores. The respondent's save stores it with its change's stamps
 * (src/Responses/ChangeClockRepo.ts).
 */
export const answerDocument = (id: string, answers: ReadonlyArray<AnswerRow>): string =>
  answersJson(answersByResponse(answers).get(id) ?? [], (a) => parseStoredValues(`${id}/${a.questionId}`, a.values))

/**
 * Renders `answers_json` again for these responses from their answer rows and their surveys'
 * current questions, tagged with each survey's `answer_layout`. A repository that writes answers
 * runs it on its own client inside the transaction that wrote them: the rendering and the rows
 * it reads then commit together.
 */
export const refreshAnswerDocuments = (sql: SqlClient.SqlClient, ids: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    for (const part of Arr.chunksOf(Arr.dedupe(ids), batch)) {
      const rows = yield* sql`${sql.literal(answersOfResponsesIn)} ${sql.in(part)}`.values
      const answers = rows.map(AnswerColumns.read)
      // A response without answers renders as `[]`; an id with no response row updates nothing.
      const rendered = part.map((id) => sql`(${id}, ${answerDocument(id, answers)})`)
      yield* sql`WITH rendered (id, answers_json) AS (VALUES ${sql.join(", ", false)(rendered)})
         UPDATE responses SET answers_json = rendered.answers_json, answers_layout = s.answer_layout
         FROM rendered, surveys s
         WHERE responses.id = rendered.id AND s.id = responses.survey_id`
    }
  })
