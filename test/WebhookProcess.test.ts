import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Webhook } from "standardwebhooks"
import { EventEnvelope } from "../src/Events/Event.js"
import { WebhookRegistered } from "../src/Webhooks/Api.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { eventually, receiver } from "./support/WebhookReceiver.js"

const main = join(import.meta.dirname, "..", "src", "main.ts")

const env = { ...process.env, WEBHOOK_ALLOW_PRIVATE_TARGETS: "true", LOG_FORMAT: "json" }

const cli = (args: ReadonlyArray<string>) =>
  Effect.promise(async () => {
    const proc = Bun.spawn(["bun", main, ...args], { env, stdout: "pipe", stderr: "pipe" })
    const code = await proc.exited
    if (code !== 0) throw new Error(`${args.join(" ")} exited ${code}: ${await new Response(proc.stderr).text()}`)
  })

const freePort = () => {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data: () => {} } })
  const port = probe.port
  probe.stop(true)
  return port
}

/** A server process on `port`, killed with SIGKILL when the scope closes (if still running). */
const server = (databasePath: string, port: number) =>
  Effect.gen(function*() {
    const proc = yield* Effect.acquireRelease(
      Effect.sync(() =>
        Bun.spawn(["bun", main, "serve", "--port", String(port), "--db", databasePath], {
          env,
          stdout: "ignore",
          stderr: "ignore"
        })
      ),
      (p) => Effect.promise(async () => {
        p.kill(9)
        await p.exited
      })
    )
    const healthy = Effect.promise(() =>
      fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.ok, () => false)
    )
    yield* eventually(healthy, (ok) => ok, { tries: 300, everyMillis: 50 })
    return proc
  })

describe("the running service", () => {
  it.live("delivers events written by the CLI, and still delivers them after a kill -9", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "webhook-process-"))
      const databasePath = join(dir, "survey.db")
      const fixture = join(dir, "fixture.json")
      writeFileSync(fixture, JSON.stringify(baseFixture))
      yield* cli(["import", fixture, "--db", databasePath])
      let calls = 0
      const target = yield* receiver(() => {
        calls++
        return new Response(calls === 1 ? "not yet" : "ok", { status: calls === 1 ? 503 : 200 })
      })
      const port = freePort()
      const first = yield* server(databasePath, port)
      const registered = yield* Effect.promise(() =>
        fetch(`http://127.0.0.1:${port}/api/v1/webhooks`, {
          method: "PUT",
          headers: { authorization: `Bearer ${TOKENS.editor}`, "content-type": "application/json" },
          body: JSON.stringify({ targetUrl: target.url })
        }).then((r) => r.json()).then(Schema.decodeUnknownSync(WebhookRegistered))
      )
      // Another process writes the event into the same database.
      yield* cli(["surveys", "publish", "srv_draft", "--db", databasePath])
      const [refused] = yield* eventually(target.received, (all) => all.length === 1, { tries: 500 })
      first.kill(9)
      yield* Effect.promise(() => first.exited)
      // The failed attempt left the delivery pending in the database; a new process picks it up.
      yield* server(databasePath, port)
      const all = yield* eventually(target.received, (all) => all.length === 2, { tries: 1000, everyMillis: 20 })
      const retried = all[1]
      expect(retried?.headers["webhook-id"]).toBe(refused?.headers["webhook-id"])
      if (retried === undefined) return yield* Effect.dieMessage("no retried delivery")
      const event = Schema.decodeUnknownSync(EventEnvelope)(
        new Webhook(registered.signingSecret).verify(retried.body, retried.headers)
      )
      expect(event["type"]).toBe("survey.published")
      expect(event["formId"]).toBe("srv_draft")
    }).pipe(Effect.scoped), 60_000)
})
