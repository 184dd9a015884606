import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import { toIso } from "../Domain/Time.js"

/**
 * The `updatedAt` of a change to one of a survey's responses. Call it inside the change's
 * transaction: it answers the current time, or one millisecond after the last instant given out
 * for the survey when that is later (a burst of changes within one millisecond, a wall clock
 * stepped back), and records it. Writers are serialised (SQLite holds one write transaction at a
 * time; PostgreSQL waits on the survey's locked clock row), so within a survey `updatedAt` grows strictly in the order in which changes commit: a
 * change committed after a poll read the list can never sort before what that poll saw.
 */
export const nextUpdatedAt = Effect.fn("Responses.nextUpdatedAt")(function*(
  sql: SqlClient.SqlClient,
  surveyId: string
) {
  const now = yield* Clock.currentTimeMillis
  // PostgreSQL runs writers side by side: the survey's clock row is locked first (created empty
  // when missing), so that the next writer for the survey reads this one's instant after it commits.
  yield* sql.onDialectOrElse({
    pg: () =>
      Effect.zipRight(
        sql`INSERT INTO response_clock (survey_id, last_updated_at) VALUES (${surveyId}, '')
          ON CONFLICT (survey_id) DO NOTHING`,
        sql`SELECT last_updated_at FROM response_clock WHERE survey_id = ${surveyId} FOR UPDATE`
      ),
    orElse: () => Effect.void
  })
  // The clock row, or for a survey whose responses were only imported so far, their latest change.
  const rows = yield* sql<{ readonly last: string | null }>`
    SELECT MAX(t) AS last FROM (
      SELECT last_updated_at AS t FROM response_clock WHERE survey_id = ${surveyId}
      UNION ALL
      SELECT MAX(updated_at) AS t FROM responses WHERE survey_id = ${surveyId}
    ) AS known`
  const last = rows[0]?.last ?? null
  const parsed = last === null ? Number.NaN : Date.parse(last)
  const lastMillis = Number.isFinite(parsed) ? parsed : Number.NEGATIVE_INFINITY
  const next = toIso(Math.max(now, lastMillis + 1))
  yield* sql`INSERT INTO response_clock (survey_id, last_updated_at) VALUES (${surveyId}, ${next})
    ON CONFLICT (survey_id) DO UPDATE SET last_updated_at = excluded.last_updated_at`
  return next
})
