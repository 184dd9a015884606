import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import { makeId } from "../Domain/Ids.js"
import { toIso } from "../Domain/Time.js"
import type { EventEnvelope, EventType } from "./Event.js"

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
    const append = Effect.fn("Outbox.append")(function*(event: NewEvent) {
      const now = yield* Clock.currentTimeMillis
      const envelope: EventEnvelope = {
        id: makeId("evt"),
        type: event.type,
        timestamp: toIso(now),
        formId: event.surveyId,
        data: event.data
      }
      yield* sql`INSERT INTO events ${
        sql.insert({
          id: envelope.id,
          type: envelope.type,
          workspaceId: event.workspaceId,
          surveyId: event.surveyId,
          payload: JSON.stringify(envelope),
          createdAt: envelope.timestamp,
          responseId: event.responseId ?? null
        })
      }`.pipe(Effect.orDie)
      return envelope
    })
    return { append } as const
  })
}) {}
