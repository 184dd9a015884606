import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import { makeId } from "../Domain/Ids.js"
import { toIso } from "../Domain/Time.js"
import type { EventEnvelope, EventType } from "../Domain/Event.js"

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
export class Outbox extends Effect.Service<Outbox>()("Events/Outbox", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    /** Appends events in one statement, in order; answers their envelopes. */
    const appendAll = Effect.fn("Outbox.appendAll")(function*(events: ReadonlyArray<NewEvent>) {
      const now = yield* Clock.currentTimeMillis
      const envelopes = events.map((event): EventEnvelope => ({
        id: makeId("evt"),
        type: event.type,
        timestamp: toIso(now),
        formId: event.surveyId,
        data: event.data
      }))
      if (envelopes.length === 0) return envelopes
      yield* sql`INSERT INTO events ${
        sql.insert(envelopes.map((envelope, i) => ({
          id: envelope.id,
          type: envelope.type,
          workspaceId: events[i]?.workspaceId ?? "",
          surveyId: envelope.formId,
          payload: JSON.stringify(envelope),
          createdAt: envelope.timestamp,
          responseId: events[i]?.responseId ?? null
        })))
      }`.pipe(Effect.orDie)
      return envelopes
    })
    const append = Effect.fn("Outbox.append")(function*(event: NewEvent) {
      const [envelope] = yield* appendAll([event])
      return envelope ?? (yield* Effect.dieMessage("Outbox.append: no envelope"))
    })
    return { append, appendAll } as const
  })
}) {}
