import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import { toIso } from "../Domain/Time.js"

const millisOf = (instant: string | null): number => {
  const parsed = instant === null || instant === "" ? Number.NaN : Date.parse(instant)
  return Number.isFinite(parsed) ? parsed : Number.NEGATIVE_INFINITY
}

/**
 * The `updatedAt` of a change to one of a survey's responses. Call it inside the change's
 * transaction: it answers the current time, or one millisecond after the last instant given out
 * for the survey when that is later (a burst of changes within one millisecond, a wall clock
 * stepped back), and records it. Writers are serialised (SQLite holds one write transaction at a
 * time; PostgreSQL waits on the survey's locked clock row), so within a survey `updatedAt` grows
 * strictly in the order in which changes commit: a change committed after a poll read the list can
 * never sort before what that poll saw.
 */
export const nextUpdatedAt = Effect.fn("Responses.nextUpdatedAt")(function*(
  sql: SqlClient.SqlClient,
  surveyId: string
) {
  const now = yield* Clock.currentTimeMillis
  return yield* sql.onDialectOrElse({
    // PostgreSQL runs writers side by side. One statement locks the survey's clock row (created
    // empty when missing) and reads it, so that the next writer for the survey reads this one's
    // instant after it commits; a second one records the new instant. The row is held until
    // commit, so the fewer round trips before it is recorded, the shorter other saves wait.
    pg: () =>
      Effect.gen(function*() {
        const held = yield* sql<{ readonly last: string }>`
          INSERT INTO response_clock AS c (survey_id, last_updated_at) VALUES (${surveyId}, '')
          ON CONFLICT (survey_id) DO UPDATE SET last_updated_at = c.last_updated_at
          RETURNING c.last_updated_at AS last`
        let last = held[0]?.last ?? ""
        if (last === "") {
          // Created just now (an empty instant is never committed): the survey's responses so
          // far were only imported, and the next instant follows their latest change.
          const imported = yield* sql<{ readonly last: string | null }>`
            SELECT MAX(updated_at) AS last FROM responses WHERE survey_id = ${surveyId}`
          last = imported[0]?.last ?? ""
        }
        const next = toIso(Math.max(now, millisOf(last) + 1))
        yield* sql`UPDATE response_clock SET last_updated_at = ${next} WHERE survey_id = ${surveyId}`
        return next
      }),
    // SQLite holds one write transaction at a time: reading and recording need no lock.
    orElse: () =>
      Effect.gen(function*() {
        // The clock row, or for a survey whose responses were only imported so far, their latest change.
        const rows = yield* sql<{ readonly last: string | null }>`
          SELECT MAX(t) AS last FROM (
            SELECT last_updated_at AS t FROM response_clock WHERE survey_id = ${surveyId}
            UNION ALL
            SELECT MAX(updated_at) AS t FROM responses WHERE survey_id = ${surveyId}
          ) AS known`
        const next = toIso(Math.max(now, millisOf(rows[0]?.last ?? null) + 1))
        yield* sql`INSERT INTO response_clock (survey_id, last_updated_at) VALUES (${surveyId}, ${next})
          ON CONFLICT (survey_id) DO UPDATE SET last_updated_at = excluded.last_updated_at`
        return next
      })
  })
})
