import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Cause, Clock, Deferred, Effect, Exit, Fiber, Option, Schema } from "effect"
import { AggregateRepo } from "../src/Analytics/AggregateRepo.js"
import { Aggregator } from "../src/Analytics/Aggregator.js"
import { EventEnvelope } from "../src/Domain/Event.js"
import { surveyId as asSurveyId, workspaceId as asWorkspaceId } from "../src/Domain/Ids.js"
import { OutboxRepo } from "../src/Events/OutboxRepo.js"
import { importFixtureInput } from "../src/Fixtures/Import.js"
import { Idempotency } from "../src/Http/Idempotency.js"
import { RespondentPurge } from "../src/Respondents/RespondentPurge.js"
import { RespondentTokens } from "../src/Respondents/RespondentTokens.js"
import { ResponseDeletion } from "../src/Responses/ResponseDeletion.js"
import { WorkBatches } from "../src/Sql/Transactions.js"
import { WebhookRepo } from "../src/Webhooks/WebhookRepo.js"
import { advance } from "./support/Advance.js"
import { baseFixture } from "./support/Fixtures.js"
import { Count } from "./support/StoredRows.js"
import { decodeAs, TestDatabase } from "./support/TestServer.js"

/**
 * Operations whose work grows with the stored data go through it in batches, each committed on
 * its own: with batches of a few rows they finish across many batches, and stopped after a batch
 * (WorkBatches' `committed` hook) they leave a consistent state that running them again completes.
 */

class Stopped extends Schema.TaggedError<Stopped>()("Stopped", {}) {}

/** The operation ended where the test stopped it, not on some other failure. */
const isStopped = (exit: Exit.Exit<unknown, unknown>) =>
  Exit.isFailure(exit) && Option.exists(Cause.dieOption(exit.cause), (defect) => defect instanceof Stopped)

/** Batches of `size`; the run dies after the `stopAt`-th committed batch of `operation` (never when undefined). */
const batchesOf = (size: number, operation?: string, stopAt?: number) => {
  let seen = 0
  return {
    erasure: size,
    purge: size,
    import: size,
    rebuild: 250,
    committed: (name: string) =>
      name === operation && ++seen === stopAt ? Effect.die(new Stopped()) : Effect.void
  }
}

const count = (statement: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(sql.unsafe(statement).pipe(Effect.orDie), (rows) => decodeAs(Schema.Array(Count), rows)[0]?.n ?? -1))

const at = (minute: number) => new Date(Date.UTC(2026, 0, 20, 0, minute)).toISOString()

/** `n` responses of `person` to srv_main, answered. */
const responsesOf = (person: string, n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => ({
    id: `rsp_${person.slice(-1)}_${from + i}`,
    surveyId: "srv_main",
    externalUserId: person,
    createdAt: at(from + i),
    completedAt: i % 3 === 0 ? null : at(from + i + 1),
    answers: [
      { questionId: "q_text", values: [`words of ${person} ${i}`] },
      { questionId: "q_pick", values: [i % 2 === 0 ? "a" : "b"] },
      { questionId: "q_num", values: [String(i)] }
    ]
  }))

const responseCountStored = count("SELECT response_count AS n FROM surveys WHERE id = 'srv_main'")
const responsesCounted = count("SELECT count(*) AS n FROM responses WHERE survey_id = 'srv_main'")

/** The stored aggregates of srv_main equal a full recompute from its responses. */
const expectExactAnalytics = Effect.gen(function*() {
  const aggregates = yield* AggregateRepo
  const aggregator = yield* Aggregator
  const srv = asSurveyId("srv_main")
  const stored = yield* aggregates.load(srv)
  yield* aggregator.rebuild(srv)
  expect(stored).toEqual(yield* aggregates.load(srv))
})

const Payload = Schema.Struct({ type: Schema.String, payload: Schema.String })

layer(TestDatabase(baseFixture))("batched work", (it) => {
  it.effect("an erasure deletes the person's responses a batch per transaction; stopped, it is finished by running it again", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const deletion = yield* ResponseDeletion
      const outbox = yield* OutboxRepo
      yield* importFixtureInput({ responses: [...responsesOf("person-x", 7), ...responsesOf("person-y", 3, 20)] })
      yield* (yield* Aggregator).catchUp()
      // A stored event carrying each of the person's responses, as saves write them.
      for (const r of responsesOf("person-x", 7)) {
        yield* outbox.append({
          type: "response.completed",
          workspaceId: "ws_a",
          surveyId: "srv_main",
          responseId: r.id,
          data: { responseId: r.id, externalUserId: "person-x", response: { id: r.id, answers: r.answers } }
        })
      }
      const person = { workspaceId: asWorkspaceId("ws_a"), externalUserId: "person-x" }
      const left = count("SELECT count(*) AS n FROM responses WHERE external_user_id = 'person-x'")
      const deletedEvents = count("SELECT count(*) AS n FROM events WHERE type = 'response.deleted'")

      const stopped = yield* Effect.exit(deletion.erase(person).pipe(Effect.provideService(WorkBatches, batchesOf(2, "erasure", 2))))
      expect(isStopped(stopped)).toBe(true)
      // Two batches committed, each with its events; the counts and aggregates agree with what is stored.
      expect(yield* left).toBe(3)
      expect(yield* deletedEvents).toBe(4)
      expect(yield* responseCountStored).toBe(yield* responsesCounted)
      yield* expectExactAnalytics

      const rest = yield* deletion.erase(person).pipe(Effect.provideService(WorkBatches, batchesOf(2)))
      expect(rest).toBe(3)
      expect(yield* left).toBe(0)
      expect(yield* deletedEvents).toBe(7)
      expect(yield* count("SELECT count(*) AS n FROM responses WHERE external_user_id = 'person-y'")).toBe(3)
      expect(yield* responseCountStored).toBe(yield* responsesCounted)
      yield* expectExactAnalytics
      // Every payload that carried a response of the person is reduced; the id stays only in the deletions.
      const payloads = decodeAs(Schema.Array(Payload), yield* sql`SELECT type, payload FROM events`.pipe(Effect.orDie))
      for (const row of payloads) {
        if (row.type === "response.deleted") continue
        expect(row.payload).not.toContain("person-x")
      }
      const completed = payloads.filter((row) => row.type === "response.completed")
        .map((row) => decodeAs(Schema.parseJson(EventEnvelope), row.payload).data)
      expect(completed).toHaveLength(7)
      for (const data of completed) expect(data).toMatchObject({ externalUserId: null, response: null })
      expect(yield* deletion.erase(person)).toBe(0)
    }))

  it.effect("a transaction waiting while an erasure runs goes between two of its batches, not after the last", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const deletion = yield* ResponseDeletion
      yield* importFixtureInput({ responses: responsesOf("person-w", 6, 60) })
      const order: Array<string> = []
      const firstBatch = yield* Deferred.make<void>()
      const batches = {
        ...batchesOf(1),
        committed: (name: string) =>
          name === "erasure" ? Effect.zipRight(Effect.sync(() => order.push("batch")), Deferred.succeed(firstBatch, undefined)) : Effect.void
      }
      // Another request's transaction, started once the erasure is under way (on SQLite it waits
      // for the one connection the erasure's batches take in turn).
      const other = yield* Effect.fork(
        Effect.zipRight(
          Deferred.await(firstBatch),
          sql.withTransaction(sql`SELECT 1 AS one`).pipe(Effect.orDie, Effect.tap(() => Effect.sync(() => order.push("other"))))
        )
      )
      const erased = yield* deletion.erase({ workspaceId: asWorkspaceId("ws_a"), externalUserId: "person-w" }).pipe(
        Effect.provideService(WorkBatches, batches)
      )
      yield* Fiber.join(other)
      expect(erased).toBe(6)
      expect(order.filter((step) => step === "batch")).toHaveLength(6)
      expect(order.indexOf("other")).toBeGreaterThan(0)
      expect(order.indexOf("other")).toBeLessThan(order.lastIndexOf("batch"))
    }))

  it.effect("an import stores responses a batch per transaction; stopped, importing it again completes it", () =>
    Effect.gen(function*() {
      const before = yield* responsesCounted
      const fixture = { responses: responsesOf("person-i", 5, 40) }
      const stopped = yield* Effect.exit(importFixtureInput(fixture).pipe(Effect.provideService(WorkBatches, batchesOf(2, "import", 2))))
      expect(isStopped(stopped)).toBe(true)
      expect(yield* responsesCounted).toBe(before + 4)
      expect(yield* responseCountStored).toBe(before + 4)
      const summary = yield* importFixtureInput(fixture).pipe(Effect.provideService(WorkBatches, batchesOf(2)))
      expect(summary).toMatchObject({ responses: 5, answers: 15 })
      expect(yield* responsesCounted).toBe(before + 5)
      expect(yield* responseCountStored).toBe(before + 5)
      expect(yield* count("SELECT count(*) AS n FROM answers WHERE response_id LIKE 'rsp_i_%'")).toBe(15)
    }))

  it.effect("the purges delete a batch per statement; stopped, the next run deletes the rest", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const tokens = yield* RespondentTokens
      const purge = yield* RespondentPurge
      const idempotency = yield* Idempotency
      const webhooks = yield* WebhookRepo
      for (let i = 0; i < 5; i++) yield* tokens.issue({ surveyId: "srv_main", embedSessionId: null, externalUserId: null })
      const start = yield* Clock.currentTimeMillis
      for (let i = 0; i < 7; i++) {
        yield* sql`INSERT INTO idempotency_keys (scope, idempotency_key, request_hash, status, body, created_at)
          VALUES ('workspace:ws_a', ${`key-${i}`}, 'h', 201, '{}', ${start + i})`
        yield* sql`INSERT INTO delivery_attempts (id, scope, workspace_id, survey_id, event_id, event_type, ok, attempted_at)
          VALUES (${`att_${i}`}, 'survey', 'ws_a', 'srv_main', ${`evt_${i}`}, 'response.completed', 1, ${start + i})`
      }
      const tokensLeft = count("SELECT count(*) AS n FROM respondent_tokens")
      const keysLeft = count("SELECT count(*) AS n FROM idempotency_keys")
      const attemptsLeft = count("SELECT count(*) AS n FROM delivery_attempts")
      const tokensBefore = yield* tokensLeft
      yield* advance("40 days")

      const stop = (operation: string) => Effect.provideService(WorkBatches, batchesOf(2, operation, 1))
      expect(isStopped(yield* Effect.exit(purge.run().pipe(stop("respondent token purge"))))).toBe(true)
      expect(yield* tokensLeft).toBe(tokensBefore - 2)
      expect((yield* purge.run().pipe(Effect.provideService(WorkBatches, batchesOf(2)))).tokens).toBe(tokensBefore - 2)
      expect(yield* tokensLeft).toBe(0)

      expect(isStopped(yield* Effect.exit(idempotency.prune().pipe(stop("idempotency key purge"))))).toBe(true)
      expect(yield* keysLeft).toBe(5)
      expect(yield* idempotency.prune().pipe(Effect.provideService(WorkBatches, batchesOf(2)))).toBe(5)
      expect(yield* keysLeft).toBe(0)

      const now = start + 40 * 86_400_000
      expect(isStopped(yield* Effect.exit(webhooks.purgeAttempts(now).pipe(stop("webhook attempt purge"))))).toBe(true)
      expect(yield* attemptsLeft).toBe(5)
      // Only those older than the cutoff.
      expect(yield* webhooks.purgeAttempts(start + 5).pipe(Effect.provideService(WorkBatches, batchesOf(2)))).toBe(3)
      expect(yield* webhooks.purgeAttempts(now).pipe(Effect.provideService(WorkBatches, batchesOf(2)))).toBe(2)
      expect(yield* attemptsLeft).toBe(0)
    }))
})
