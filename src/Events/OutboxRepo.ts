import { SqlClient, type Statement } from "@effect/sql"
import { Clock, Effect } from "effect"
import { makeId } from "../Domain/Ids.js"
import { toIso } from "../Domain/Time.js"
import type { EventEnvelope, EventType } from "../Domain/Event.js"
import { SqlDialect } from "../Sql/Dialect.js"

export interface NewEvent {
  readonly type: EventType
  readonly workspaceId: string
  readonly surveyId: string | null
  readonly data: Readonly<Record<string, unknown>>
  /** The response the event carries, if any: deleting that response reduces the stored payload. */
  readonly responseId?: string
}

/**
 * Appends an event to the outbox. Call it inside the transaction of the change that causes
 * the event, so that the change and its event commit together or not at all.
 */
export class OutboxRepo extends Effect.Service<OutboxRepo>()("Events/OutboxRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const dialect = yield* SqlDialect
    /**
     * Appends events in one statement, in order; answers their envelopes. A write given as
     * `alongside` (another repository's statement, such as a survey's count) runs with them: on
     * PostgreSQL in the same statement, one round trip, after the events' table is locked for the
     * insert as the insert alone would; on SQLite right after it.
     */
    const appendAll = Effect.fn("OutboxRepo.appendAll")(function*(
      events: ReadonlyArray<NewEvent>,
      alongside?: Statement.Statement<unknown>
    ) {
      const now = yield* Clock.currentTimeMillis
      const envelopes = events.map((event): EventEnvelope => ({
        id: makeId("evt"),
        type: event.type,
        timestamp: toIso(now),
        formId: event.surveyId,
        data: event.data
      }))
      if (envelopes.length === 0) {
        if (alongside !== undefined) yield* Effect.orDie(alongside)
        return envelopes
      }
      const insert = sql`INSERT INTO events ${
        sql.insert(envelopes.map((envelope, i) => ({
          id: envelope.id,
          type: envelope.type,
          workspaceId: events[i]?.workspaceId ?? "",
          surveyId: envelope.formId,
          payload: JSON.stringify(envelope),
          createdAt: envelope.timestamp,
          responseId: events[i]?.responseId ?? null
        })))
      }`
      yield* (alongside === undefined
        ? insert
        : dialect.choose({
          pg: () => sql`WITH appended AS (${insert}) ${alongside}`,
          sqlite: () => Effect.zipRight(insert, alongside)
        })).pipe(Effect.orDie)
      return envelopes
    })
    const append = Effect.fn("OutboxRepo.append")(function*(event: NewEvent) {
      const [envelope] = yield* appendAll([event])
      return envelope ?? (yield* Effect.dieMessage("OutboxRepo.append: no envelope"))
    })
    /**
     * Takes now the lock on the events' table that the transaction's later append would take
     * (PostgreSQL; nothing on SQLite, where the transaction holds the write lock). For a
     * transaction that locks rows a save also locks and appends afterwards: it waits for a log
     * reader settling the outbox (src/Sql/Dialect.ts `settledSeq`) before it holds those rows,
     * never while holding them. Waiting there while holding them, behind the reader, which waits
     * for a save, which waits for the rows, stands all three still until PostgreSQL's deadlock check.
     */
    const lockForAppend = dialect.choose({
      pg: () => Effect.orDie(Effect.asVoid(sql`LOCK TABLE events IN ROW EXCLUSIVE MODE`)),
      sqlite: () => Effect.void
    })
    return { append, appendAll, lockForAppend } as const
  })
}) {}
