import { describe, expect, it } from "@effect/vitest"
import { SqlClient, SqlError } from "@effect/sql"
import { Effect, Layer, Schema } from "effect"
import { RepositoriesLive } from "../src/App.js"
import { OutboxRepo } from "../src/Events/OutboxRepo.js"
import { Signer } from "../src/Webhooks/Signer.js"
import { allTypesAnswers, respondentFixture } from "./support/RespondentFixtures.js"
import { bodyOf, call, decodeAs, ErrorBody, TestServer } from "./support/TestServer.js"
import { StoredCounts } from "./support/StoredRows.js"
import { eventually, receiver } from "./support/WebhookReceiver.js"
import { complete, register, WebhookWorld } from "./support/WebhookWorld.js"
import { TOKENS } from "./support/Fixtures.js"
import { clientFor } from "./support/ApiClient.js"

const PageBody = Schema.Struct({ respondentToken: Schema.String })

/**
 * The live outbox, except that every append dies with `failure` after writing its event row:
 * the write it belongs to must then leave nothing behind, its event included.
 */
const outboxFailingWith = (failure: unknown) =>
  Layer.merge(
    RepositoriesLive,
    Layer.effect(
      OutboxRepo,
      Effect.map(OutboxRepo, (live) =>
        OutboxRepo.make({
          append: (event) => Effect.zipRight(live.append(event), Effect.die(failure)),
          appendAll: (events) => Effect.zipRight(live.appendAll(events), Effect.die(failure)),
          lockForAppend: live.lockForAppend
        }))
    ).pipe(Layer.provide(OutboxRepo.Default))
  )

const busy = new SqlError.SqlError({ cause: { code: "SQLITE_BUSY" }, message: "database is locked" })

const stored = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const [row] = decodeAs(Schema.Array(StoredCounts), yield* sql`
    SELECT (SELECT count(*) FROM responses) AS responses,
           (SELECT count(*) FROM answers) AS answers,
           (SELECT count(*) FROM response_changes) AS changes,
           (SELECT count(*) FROM events) AS events,
           (SELECT response_count FROM surveys WHERE id = 'srv_all') AS response_count`.pipe(Effect.orDie))
  return row
})

describe("the production graph with a failing repository", () => {
  const cases = [
    ["a busy database", busy, 503, "service_unavailable"],
    ["a defect", new Error("disk on fire"), 500, "internal_error"]
  ] as const
  for (const [name, failure, status, code] of cases) {
    it.effect(`${name} in the outbox answers ${status} ${code} and leaves the finished response unwritten`, () =>
      Effect.gen(function*() {
        const page = yield* call("GET", "/s/srv_all", { headers: { accept: "application/json" } })
        const token = bodyOf(PageBody, page).respondentToken
        const before = yield* stored
        const res = yield* call("POST", "/respond/v1/responses", {
          token,
          body: JSON.stringify({ answers: allTypesAnswers, finished: true })
        })
        expect(res.status).toBe(status)
        expect(bodyOf(ErrorBody, res).code).toBe(code)
        expect(res.text).not.toContain("disk on fire")
        expect(res.headers["x-request-id"]).toMatch(/\S/)
        expect(yield* stored).toEqual(before)
      }).pipe(Effect.provide(TestServer(respondentFixture, {}, { repositories: outboxFailingWith(failure) }))))
  }
})

describe("one signer for the HTTP API and the delivery worker", () => {
  it.live("a swapped signer signs both POST /webhooks/test and the worker's deliveries", () => {
    const signed: Array<string> = []
    const recording = Layer.effect(
      Signer,
      Effect.map(Signer, (real) =>
        Signer.of({
          newSecret: real.newSecret,
          sign: (input) =>
            Effect.map(real.sign(input), (headers) => {
              signed.push(input.eventId)
              return { ...headers, "x-signed-by": "recording" }
            })
        }))
    ).pipe(Layer.provide(Signer.StandardWebhooks))
    return Effect.gen(function*() {
      const target = yield* receiver()
      yield* register(target.url)
      const api = yield* clientFor(TOKENS.editor)
      expect((yield* api.workspaceWebhooks.test()).delivered).toBe(true)
      const event = yield* complete("srv_main")
      const received = yield* eventually(target.received, (all) => all.length === 2)
      expect(received.map((r) => r.headers["x-signed-by"])).toEqual(["recording", "recording"])
      expect(received[1]?.headers["webhook-id"]).toBe(event.id)
      expect(signed).toEqual(received.map((r) => r.headers["webhook-id"]))
    }).pipe(Effect.provide(WebhookWorld({}, recording)), Effect.scoped)
  })
})
