import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { EventEnvelope, type EventType } from "../src/Domain/Event.js"
import { OutboxRepo } from "../src/Events/OutboxRepo.js"
import { SurveyId } from "../src/Domain/Ids.js"
import { clientFor } from "./support/ApiClient.js"
import { TOKENS } from "./support/Fixtures.js"
import { migrateUpTo, withBareDatabase } from "./support/Migrations.js"
import { decodeAs } from "./support/TestServer.js"
import { eventually, receiver } from "./support/WebhookReceiver.js"
import { deliveries, WebhookWorld } from "./support/WebhookWorld.js"

const emit = (type: EventType, surveyId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const outbox = yield* OutboxRepo
    return yield* sql.withTransaction(outbox.append({ type, workspaceId: "ws_a", surveyId, data: {} })).pipe(Effect.orDie)
  })

const typesOf = (received: ReadonlyArray<{ readonly body: string }>) =>
  received.map((r) => decodeAs(EventEnvelope, JSON.parse(r.body)).type).sort()

/** Whether the fan-out has passed every event in the outbox (its cursor is at the last one). */
const fannedOut = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql`SELECT CASE WHEN
      (SELECT last_seq FROM outbox_cursors WHERE name = 'webhooks') >= (SELECT MAX(seq) FROM events)
    THEN 1 ELSE 0 END AS done`).pipe(
    Effect.map((rows) => decodeAs(Schema.Array(Schema.Struct({ done: Schema.Number })), rows)[0]?.done === 1),
    Effect.orDie
  )

describe("event filters", () => {
  it.live("each webhook receives only the event types it names; webhook.test is never filtered", () =>
    Effect.gen(function*() {
      const defaults = yield* receiver()
      const optedIn = yield* receiver()
      // The typed calls succeed only on the declared 200.
      const api = yield* clientFor(TOKENS.editor)
      yield* api.workspaceWebhooks.put({ payload: { targetUrl: defaults.url } })
      yield* api.surveyWebhook.put({
        path: { id: SurveyId.make("srv_main") },
        payload: { targetUrl: optedIn.url, events: ["response.created", "response.deleted", "survey.closed"] }
      })

      yield* emit("response.created", "srv_main")
      yield* emit("response.updated", "srv_main")
      yield* emit("response.completed", "srv_main")
      yield* emit("response.deleted", "srv_main")
      yield* emit("survey.closed", "srv_main")

      // Fan-out applies the filter: once every delivery it made has arrived, nothing else is coming.
      yield* eventually(fannedOut, (done) => done)
      yield* eventually(deliveries, (all) => all.length > 0 && all.every((d) => d.state === "delivered"))
      expect(yield* deliveries).toHaveLength(5)
      expect(typesOf(yield* defaults.received)).toEqual(["response.completed", "survey.closed"])
      expect(typesOf(yield* optedIn.received)).toEqual(["response.created", "response.deleted", "survey.closed"])

      // A workspace webhook that names none of the v1 set still gets the test event.
      yield* api.workspaceWebhooks.put({ payload: { targetUrl: defaults.url, events: ["response.deleted"] } })
      expect(yield* api.workspaceWebhooks.test({})).toEqual({ delivered: true })
      expect(typesOf(yield* defaults.received)).toEqual(["response.completed", "survey.closed", "webhook.test"])
    }).pipe(Effect.provide(WebhookWorld()), Effect.scoped))
})

describe("migration 0010", () => {
  it.scoped("webhooks registered before filters existed receive the v1 set and stay enabled", () =>
    withBareDatabase(
      "survey-0010-",
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* migrateUpTo("0009_~")
        yield* sql.unsafe(`INSERT INTO accounts (id, plan_id) VALUES ('acc', 'pro')`)
        yield* sql.unsafe(`INSERT INTO workspaces (id, owner_account_id) VALUES ('ws', 'acc')`)
        yield* sql.unsafe(`INSERT INTO webhooks (id, workspace_id, survey_id, target_url, secret, since_seq, created_at, updated_at)
          VALUES ('whk', 'ws', NULL, 'https://hooks.example.com/', 'whsec_x', 0, 't', 't')`)
        yield* migrateUpTo("9999")
        const types = yield* sql`SELECT event_type FROM webhook_event_types WHERE webhook_id = 'whk' ORDER BY event_type`
        expect(types.map((row) => row["event_type"])).toEqual(["response.completed", "survey.closed", "survey.published"])
        expect(yield* sql`SELECT disabled_reason, failing_since FROM webhooks`).toEqual([
          { disabled_reason: null, failing_since: null }
        ])
        // Removing the webhook removes its filter.
        yield* sql`DELETE FROM webhooks WHERE id = 'whk'`
        expect(yield* sql`SELECT * FROM webhook_event_types`).toEqual([])
      })
    ).pipe(Effect.orDie))
})
