import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, Either, Schema } from "effect"
import { Survey } from "../src/Domain/Survey.js"
import { EventEnvelope } from "../src/Domain/Event.js"
import { SurveyLifecycle } from "../src/Surveys/SurveyLifecycle.js"
import { SurveyRepo } from "../src/Surveys/SurveyRepo.js"
import { baseFixture } from "./support/Fixtures.js"
import { decodeAs, TestDatabase } from "./support/TestServer.js"
import { SurveyId } from "../src/Domain/Ids.js"

const StoredEvent = Schema.Struct({
  id: Schema.String,
  type: Schema.String,
  workspaceId: Schema.String,
  surveyId: Schema.String,
  payload: Schema.String,
  createdAt: Schema.String
})

const decodeEnvelope = Schema.decodeUnknownSync(Schema.parseJson(EventEnvelope))
const decodeSurveyData = Schema.decodeUnknownSync(Schema.Struct({ survey: Survey }))

const eventsOf = (surveyId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql`
      SELECT id, type, workspace_id, survey_id, payload, created_at FROM events WHERE survey_id = ${surveyId} ORDER BY seq`
      .pipe(Effect.orDie)
    return decodeAs(Schema.Array(StoredEvent), rows)
  })

layer(TestDatabase(baseFixture))("survey lifecycle events in the outbox", (it) => {
  it.effect("publish and close each write one complete event with the Survey resource as it is after the move", () =>
    Effect.gen(function*() {
      const lifecycle = yield* SurveyLifecycle
      const repo = yield* SurveyRepo
      expect(yield* eventsOf("srv_draft")).toEqual([])

      yield* lifecycle.apply(SurveyId.make("srv_draft"), "publish").pipe(Effect.orDie)
      const published = (yield* repo.findById(SurveyId.make("srv_draft")).pipe(Effect.flatMap(Effect.orDie))).toApi()
      yield* lifecycle.apply(SurveyId.make("srv_draft"), "close").pipe(Effect.orDie)
      const closed = (yield* repo.findById(SurveyId.make("srv_draft")).pipe(Effect.flatMap(Effect.orDie))).toApi()

      const rows = yield* eventsOf("srv_draft")
      expect(rows.map((r) => r.type)).toEqual(["survey.published", "survey.closed"])
      const [first, second] = rows.map((row) => {
        const envelope = decodeEnvelope(row.payload)
        expect(envelope.id).toBe(row.id)
        expect(envelope.id).toMatch(/^evt_[A-Za-z0-9]{20}$/)
        expect(envelope.type).toBe(row.type)
        expect(envelope.timestamp).toBe(row.createdAt)
        expect(envelope.formId).toBe("srv_draft")
        expect(row.workspaceId).toBe("ws_a")
        return decodeSurveyData(envelope.data).survey
      })
      expect(first).toEqual(published)
      expect(first!.status).toBe("published")
      expect(first!.published).toBe(true)
      expect(second).toEqual(closed)
      expect(second!.status).toBe("closed")
      expect(second!.published).toBe(false)
    }))

  it.effect("a refused move or a trash writes no event", () =>
    Effect.gen(function*() {
      const lifecycle = yield* SurveyLifecycle
      const refused = yield* Effect.flip(lifecycle.apply(SurveyId.make("srv_closed"), "close"))
      expect(refused._tag).toBe("TransitionRefused")
      yield* lifecycle.apply(SurveyId.make("srv_closed"), "trash").pipe(Effect.orDie)
      expect(yield* eventsOf("srv_closed")).toEqual([])
      const gone = yield* Effect.flip(lifecycle.apply(SurveyId.make("srv_closed"), "publish"))
      expect(gone._tag).toBe("SurveyMissing")
      expect(yield* eventsOf("srv_closed")).toEqual([])
    }))
})

layer(TestDatabase(baseFixture))("survey lifecycle moves at once", (it) => {
  it.effect("of two publishes at once one moves the survey and writes the event; the other is refused", () =>
    Effect.gen(function*() {
      const lifecycle = yield* SurveyLifecycle
      const outcomes = yield* Effect.all(
        [lifecycle.apply(SurveyId.make("srv_draft"), "publish"), lifecycle.apply(SurveyId.make("srv_draft"), "publish")].map(Effect.either),
        { concurrency: "unbounded" }
      )
      expect(outcomes.filter(Either.isRight)).toHaveLength(1)
      expect(outcomes.flatMap((o) => (Either.isLeft(o) ? [o.left._tag] : []))).toEqual(["TransitionRefused"])
      expect((yield* eventsOf("srv_draft")).map((r) => r.type)).toEqual(["survey.published"])
    }))
})
