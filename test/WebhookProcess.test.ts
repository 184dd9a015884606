import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Webhook } from "standardwebhooks"
import { EventEnvelope } from "../src/Domain/Event.js"
import { clientAt } from "./support/ApiClient.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { elsewhereRows } from "./support/Elsewhere.js"
import { cli, polled, PROCESS_TEST_TIMEOUT, serveProcess, sharedDatabase, within } from "./support/ServeProcess.js"
import { receiver } from "./support/WebhookReceiver.js"

describe("the running service", () => {
  it.live("delivers events written by the CLI, and still delivers them after a kill -9", () =>
    Effect.gen(function*() {
      const { config, flags } = yield* sharedDatabase(baseFixture)
      let calls = 0
      const target = yield* receiver(() => {
        calls++
        return new Response(calls === 1 ? "not yet" : "ok", { status: calls === 1 ? 503 : 200 })
      })
      const first = yield* serveProcess(flags)
      const api = yield* clientAt(first.base, TOKENS.editor)
      const registered = yield* api.workspaceWebhooks.put({ payload: { targetUrl: target.url } })
      // Another process writes the event into the same database.
      yield* cli(["surveys", "publish", "srv_draft", ...flags])
      const [refused] = yield* within("the first attempt at the receiver", target.receivedAtLeast(1))
      // Killed once the refused attempt is written (its lease released, its retry scheduled).
      const attempted = elsewhereRows("SELECT attempts, lease_until FROM deliveries").pipe(Effect.provide(config))
      yield* polled("the refused attempt written", attempted, (rows) => rows[0]?.["attempts"] === 1 && rows[0]["leaseUntil"] === 0)
      first.proc.kill(9)
      yield* Effect.promise(() => first.proc.exited)
      // The failed attempt left the delivery pending in the database; a new process picks it up.
      yield* serveProcess(flags)
      const all = yield* within("the retry at the receiver", target.receivedAtLeast(2))
      const retried = all[1]
      expect(retried?.headers["webhook-id"]).toBe(refused?.headers["webhook-id"])
      if (retried === undefined) return yield* Effect.dieMessage("no retried delivery")
      const event = Schema.decodeUnknownSync(EventEnvelope)(
        new Webhook(registered.signingSecret).verify(retried.body, retried.headers)
      )
      expect(event["type"]).toBe("survey.published")
      expect(event["formId"]).toBe("srv_draft")
    }).pipe(Effect.scoped), PROCESS_TEST_TIMEOUT)
})
