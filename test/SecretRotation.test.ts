import type { HttpClientResponse } from "@effect/platform"
import { describe, expect, it, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Duration, Effect, Schema, TestClock } from "effect"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Webhook } from "standardwebhooks"
import { SurveyId } from "../src/Domain/Ids.js"
import { toIso } from "../src/Domain/Time.js"
import { purgeOnce } from "../src/Webhooks/Purge.js"
import { SecretRotated } from "../src/Webhooks/Api.js"
import { advance } from "./support/Advance.js"
import { clientFor, outcomeOf } from "./support/ApiClient.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { bodyOf, call, ErrorBody, TestServer } from "./support/TestServer.js"
import { type Received, receiver } from "./support/WebhookReceiver.js"
import { complete, register, WebhookWorld } from "./support/WebhookWorld.js"

const DAY = 24 * 60 * 60 * 1000

/** A webhook: the workspace's (`/webhooks`), or a survey's (`/surveys/{id}/webhook`). */
interface Hook {
  readonly path: string
  readonly surveyId?: SurveyId
}

const workspaceHook: Hook = { path: "/webhooks" }
const surveyHook = (id: string): Hook => ({ path: `/surveys/${id}/webhook`, surveyId: SurveyId.make(id) })

/**
 * A rotation with a body, raw: the contract declares none (the body is optional, which a payload
 * cannot say), so the typed client sends no secret and no malformed body.
 */
const rotateWithBody = (hook: Hook, body: string) => call("POST", `/api/v1${hook.path}/secret/rotate`, { token: TOKENS.editor, body })

/** Rotates the secret of `hook` as `token`, answering the rotation with its response. */
const rotation = (hook: Hook, token: string = TOKENS.editor) =>
  Effect.flatMap(clientFor(token), (api) =>
    hook.surveyId === undefined
      ? api.workspaceWebhooks.rotateSecret({ withResponse: true })
      : api.surveyWebhook.rotateSecret({ path: { id: hook.surveyId }, withResponse: true }))

/** The body of an answer the typed client decoded, as it came: with any field the client would drop. */
const textOf = (answer: HttpClientResponse.HttpClientResponse) =>
  Effect.orDie(Effect.map(answer.arrayBuffer, (bytes) => new TextDecoder().decode(bytes)))

/** Rotates the secret of `hook` to a new random one; answers the rotation, which carries no signing secret field. */
const rotated = (hook: Hook) =>
  Effect.gen(function*() {
    const [made, answer] = yield* rotation(hook)
    expect(yield* textOf(answer)).not.toContain("signingSecret")
    return made
  })

/** Rotates the secret of `hook` to `secret`. */
const rotatedTo = (hook: Hook, secret: string) =>
  Effect.gen(function*() {
    const res = yield* rotateWithBody(hook, JSON.stringify({ secret }))
    if (res.status !== 200) return yield* Effect.dieMessage(`rotation answered ${res.status}: ${res.text}`)
    expect(res.text).not.toContain("signingSecret")
    return bodyOf(SecretRotated, res)
  })

const settingsOf = (hook: Hook) =>
  Effect.flatMap(clientFor(TOKENS.editor), (api) =>
    hook.surveyId === undefined ? api.workspaceWebhooks.get() : api.surveyWebhook.get({ path: { id: hook.surveyId } }))

const signaturesOf = (request: Received) => (request.headers["webhook-signature"] ?? "").split(" ")

/** The signature the `standardwebhooks` package computes with `secret` for what the receiver got. */
const signedBy = (secret: string, request: Received) =>
  new Webhook(secret).sign(
    request.headers["webhook-id"] ?? "",
    new Date(Number(request.headers["webhook-timestamp"]) * 1000),
    request.body
  )

/**
 * Every request carries one signature per secret, newest first, and `standardwebhooks` verifies
 * it with each secret alone (a receiver still holding any one of them), never with another.
 */
const expectSignedByEach = (requests: ReadonlyArray<Received>, secrets: ReadonlyArray<string>, stranger: string) => {
  for (const request of requests) {
    expect(signaturesOf(request)).toEqual(secrets.map((secret) => signedBy(secret, request)))
    for (const secret of secrets) {
      expect(() => new Webhook(secret).verify(request.body, request.headers)).not.toThrow()
    }
    expect(() => new Webhook(stranger).verify(request.body, request.headers)).toThrow()
  }
}

/** A receiver that refuses every other request of one event id: each first attempt fails, its retry succeeds. */
const refusingFirstTries = () => {
  const seen = new Map<string, number>()
  return receiver((request) => {
    const id = request.headers.get("webhook-id") ?? ""
    const before = seen.get(id) ?? 0
    seen.set(id, before + 1)
    return new Response("", { status: before % 2 === 0 ? 500 : 200 })
  })
}

/** Sends a test event to `hook`; answers whether it was delivered. */
const testEvent = (hook: Hook) =>
  Effect.flatMap(clientFor(TOKENS.editor), (api) =>
    hook.surveyId === undefined ? api.workspaceWebhooks.test() : api.surveyWebhook.test({ path: { id: hook.surveyId } }))

/** The outbox is polled hourly, so that a day passes in a few rounds of the worker. */
const hourly = WebhookWorld({ pollInterval: Duration.hours(1) })

/** A test clock at the real time, so that `standardwebhooks` accepts the `webhook-timestamp` of what is sent. */
const atRealTime = <A, E, R>(test: Effect.Effect<A, E, R>) => Effect.zipRight(TestClock.setTime(Date.now()), test)

describe("rotating a webhook's signing secret", () => {
  it.effect("signs first attempts, retries, redeliveries and test events with every honoured secret, newest first", () =>
    atRealTime(
      Effect.gen(function*() {
        const target = yield* refusingFirstTries()
        const first = yield* register(target.url)
        const api = yield* clientFor(TOKENS.editor)
        const stranger = `whsec_${Buffer.alloc(32, 7).toString("base64")}`
        let seen = 0
        /** An event's first attempt and retry, its redelivery and that one's retry, and a test event. */
        const everyKindOfAttempt = (responseId: string) =>
          Effect.gen(function*() {
            const event = yield* complete("srv_main", "ws_a", responseId)
            yield* advance("1 second")
            yield* target.receivedAtLeast(seen + 1)
            yield* advance("6 seconds")
            yield* target.receivedAtLeast(seen + 2)
            const redelivery = yield* api.workspaceWebhooks.redeliver({ path: { eventId: event.id } })
            expect(redelivery).toEqual({ eventId: event.id, queued: true })
            yield* advance("1 second")
            yield* target.receivedAtLeast(seen + 3)
            yield* advance("6 seconds")
            yield* target.receivedAtLeast(seen + 4)
            // The receiver refuses every first attempt of an id, the test event's among them.
            expect(yield* testEvent(workspaceHook)).toEqual({ delivered: false })
            const all = yield* target.receivedAtLeast(seen + 5)
            const these = all.slice(seen)
            seen = all.length
            expect(these.map((r) => r.headers["webhook-id"])).toEqual([event.id, event.id, event.id, event.id, expect.any(String)])
            return these
          })

        const second = yield* rotated(workspaceHook)
        expect(second.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
        expect(second.previousSecretExpiresAt).toBe(toIso((yield* TestClock.currentTimeMillis) + DAY))
        expectSignedByEach(yield* everyKindOfAttempt("rsp_1"), [second.secret, first], stranger)

        const chosen = `whsec_${Buffer.alloc(24, 1).toString("base64")}`
        const third = yield* rotatedTo(workspaceHook, chosen)
        expect(third.secret).toBe(chosen)
        expectSignedByEach(yield* everyKindOfAttempt("rsp_2"), [chosen, second.secret, first], stranger)
        // The secrets appear in no answer but the rotation's.
        const [read, answer] = yield* api.workspaceWebhooks.get({ withResponse: true })
        expect(yield* textOf(answer)).not.toContain("whsec_")
        expect(read.previousSecretExpiresAt).toBe(third.previousSecretExpiresAt)
      }).pipe(Effect.provide(WebhookWorld()), Effect.scoped)
    ))

  it.effect("honours a replaced secret for 24 hours, then signs with the current one alone", () =>
    Effect.gen(function*() {
      const target = yield* receiver()
      const first = yield* register(target.url, "srv_main")
      const hook = surveyHook("srv_main")
      expect((yield* settingsOf(hook)).previousSecretExpiresAt).toBeNull()
      const start = yield* TestClock.currentTimeMillis
      const second = yield* rotated(hook)
      expect((yield* settingsOf(hook)).previousSecretExpiresAt).toBe(toIso(start + DAY))
      yield* advance(Duration.millis(DAY - 1))
      expect(yield* testEvent(hook)).toEqual({ delivered: true })
      const [before] = yield* target.receivedAtLeast(1)
      if (before === undefined) return yield* Effect.dieMessage("no test event")
      expect(signaturesOf(before)).toEqual([signedBy(second.secret, before), signedBy(first, before)])
      expect((yield* settingsOf(hook)).previousSecretExpiresAt).toBe(toIso(start + DAY))

      yield* advance("1 millis")
      expect((yield* settingsOf(hook)).previousSecretExpiresAt).toBeNull()
      expect(yield* testEvent(hook)).toEqual({ delivered: true })
      yield* complete("srv_main", "ws_a", "rsp_3")
      yield* advance("1 hour")
      const after = (yield* target.receivedAtLeast(3)).slice(1)
      for (const request of after) {
        expect(signaturesOf(request)).toEqual([signedBy(second.secret, request)])
      }
    }).pipe(Effect.provide(hourly), Effect.scoped))

  it.effect("honours at most the five most recent replaced secrets, each for 24 hours from its own rotation", () =>
    Effect.gen(function*() {
      const target = yield* receiver()
      const secrets = [yield* register(target.url)]
      const start = yield* TestClock.currentTimeMillis
      for (let i = 0; i < 7; i++) {
        secrets.unshift((yield* rotated(workspaceHook)).secret)
        yield* advance("1 hour")
      }
      // Seven rotations: the current secret and the five most recent replaced ones.
      expect(yield* testEvent(workspaceHook)).toEqual({ delivered: true })
      const [six] = yield* target.receivedAtLeast(1)
      if (six === undefined) return yield* Effect.dieMessage("no test event")
      expect(signaturesOf(six)).toEqual(secrets.slice(0, 6).map((secret) => signedBy(secret, six)))
      // The last rotation, 1 hour ago, sets when the overlap ends.
      expect((yield* settingsOf(workspaceHook)).previousSecretExpiresAt).toBe(toIso(start + 6 * 3_600_000 + DAY))

      // 24 hours after the fourth rotation: the secrets it and the earlier ones replaced are no longer honoured.
      yield* advance(Duration.millis(DAY - 4 * 3_600_000))
      expect(yield* testEvent(workspaceHook)).toEqual({ delivered: true })
      const [, four] = yield* target.receivedAtLeast(2)
      if (four === undefined) return yield* Effect.dieMessage("no test event")
      expect(signaturesOf(four)).toEqual(secrets.slice(0, 4).map((secret) => signedBy(secret, four)))
    }).pipe(Effect.provide(hourly), Effect.scoped))

  it.effect("the background purge deletes replaced secrets once their overlap ends, not at the next rotation", () =>
    Effect.gen(function*() {
      const target = yield* receiver()
      const first = yield* register(target.url)
      const second = (yield* rotated(workspaceHook)).secret
      yield* advance("12 hours")
      yield* rotated(workspaceHook)
      const sql = yield* SqlClient.SqlClient
      const stored = Effect.map(
        sql`SELECT previous_secrets AS p FROM webhooks WHERE workspace_id = 'ws_a' AND survey_id IS NULL`.pipe(Effect.orDie),
        (rows) => Schema.decodeUnknownSync(Schema.Array(Schema.Struct({ p: Schema.String })))(rows)[0]?.p ?? ""
      )
      expect(yield* stored).toContain(first)
      expect(yield* stored).toContain(second)

      // 24 hours after the first rotation: the first secret is past its overlap, the second is not.
      yield* advance("12 hours")
      yield* purgeOnce
      expect(yield* stored).not.toContain(first)
      expect(yield* stored).toContain(second)
      yield* advance("12 hours")
      yield* purgeOnce
      expect(yield* stored).toBe("[]")
      expect((yield* settingsOf(workspaceHook)).previousSecretExpiresAt).toBeNull()
    }).pipe(Effect.provide(hourly), Effect.scoped))

  it.effect("a PUT registering the webhook again replaces the secret at once, without an overlap", () =>
    Effect.gen(function*() {
      const target = yield* receiver()
      yield* register(target.url)
      yield* rotated(workspaceHook)
      yield* rotated(workspaceHook)
      const secret = yield* register(target.url)
      expect((yield* settingsOf(workspaceHook)).previousSecretExpiresAt).toBeNull()
      expect(yield* testEvent(workspaceHook)).toEqual({ delivered: true })
      yield* complete("srv_main")
      yield* advance("1 second")
      const received = yield* target.receivedAtLeast(2)
      for (const request of received) expect(signaturesOf(request)).toEqual([signedBy(secret, request)])
    }).pipe(Effect.provide(WebhookWorld()), Effect.scoped))
})

/** How a rotation of `hook`'s secret as `token` ends: "ok", or its error's tag. */
const rotationOutcome = (hook: Hook, token?: string) => outcomeOf(rotation(hook, token))

const someTarget = "http://127.0.0.1:9/rotation"

layer(TestServer(baseFixture, { webhookAllowPrivateTargets: true }))(
  "secret rotation requests",
  (it) => {
    it.effect("follow the scope rules: editor key, workspace key for the workspace webhook, a webhook in the scope", () =>
      Effect.gen(function*() {
        const main = surveyHook("srv_main")
        // No webhook in the scope.
        expect(yield* rotationOutcome(workspaceHook)).toBe("InvalidRequest")
        expect(yield* rotationOutcome(main)).toBe("InvalidRequest")
        yield* register(someTarget)
        yield* register(someTarget, "srv_main")
        // Viewers write nothing; a survey-limited key has no workspace webhook and only its surveys.
        expect(yield* rotationOutcome(workspaceHook, TOKENS.viewer)).toBe("Forbidden")
        expect(yield* rotationOutcome(main, TOKENS.viewer)).toBe("Forbidden")
        expect(yield* rotationOutcome(workspaceHook, TOKENS.limited)).toBe("Forbidden")
        expect(yield* rotationOutcome(surveyHook("srv_draft"), TOKENS.limited)).toBe("Forbidden")
        for (const id of ["srv_other", "srv_trashed", "srv_nope"]) {
          expect(yield* rotationOutcome(surveyHook(id)), id).toBe("NotFound")
        }
        expect(yield* rotationOutcome(surveyHook("srv_draft"))).toBe("InvalidRequest")
        expect((yield* settingsOf(workspaceHook)).previousSecretExpiresAt).toBeNull()
        expect((yield* settingsOf(main)).previousSecretExpiresAt).toBeNull()

        // A survey-limited key rotates its survey's webhook; the workspace webhook is another scope.
        expect(yield* rotationOutcome(main, TOKENS.limited)).toBe("ok")
        expect((yield* settingsOf(main)).previousSecretExpiresAt).not.toBeNull()
        expect((yield* settingsOf(workspaceHook)).previousSecretExpiresAt).toBeNull()
        expect(yield* rotationOutcome(workspaceHook)).toBe("ok")
        expect((yield* settingsOf(workspaceHook)).previousSecretExpiresAt).not.toBeNull()

        // Removed: nothing to rotate.
        yield* Effect.flatMap(clientFor(TOKENS.editor), (api) => api.workspaceWebhooks.delete())
        expect(yield* rotationOutcome(workspaceHook)).toBe("InvalidRequest")
        expect(yield* rotationOutcome(workspaceHook, TOKENS.other)).toBe("InvalidRequest")
      }))

    it.effect("refuse bad bodies with 400 naming the field, and change nothing", () =>
      Effect.gen(function*() {
        const closed = surveyHook("srv_closed")
        yield* register(someTarget, "srv_closed")
        const bytes = (n: number) => `whsec_${Buffer.alloc(n, 9).toString("base64")}`
        const cases: ReadonlyArray<readonly [string, string]> = [
          [JSON.stringify({ secret: bytes(23) }), "secret"],
          [JSON.stringify({ secret: bytes(65) }), "secret"],
          [JSON.stringify({ secret: Buffer.alloc(32, 9).toString("base64") }), "secret"],
          [JSON.stringify({ secret: "whsec_not base64!" }), "secret"],
          [JSON.stringify({ secret: `${bytes(32)}=` }), "secret"],
          [JSON.stringify({ secret: 42 }), "secret"],
          [JSON.stringify({ secret: null }), "secret"],
          [JSON.stringify({ secret: bytes(32), extra: true }), "extra"],
          [JSON.stringify([]), ""],
          ["null", ""],
          ["{\"secret\":", ""]
        ]
        for (const [body, path] of cases) {
          const res = yield* rotateWithBody(closed, body)
          expect(res.status, body).toBe(400)
          const error = bodyOf(ErrorBody, res)
          expect(error.code, body).toBe("invalid_request")
          expect(error.issues?.map((issue) => issue.path), body).toContain(path)
        }
        expect((yield* settingsOf(closed)).previousSecretExpiresAt).toBeNull()
        // The extremes are taken; an empty object and no body generate a secret.
        for (const body of [JSON.stringify({ secret: bytes(24) }), JSON.stringify({ secret: bytes(64) }), "{}"]) {
          const res = yield* rotateWithBody(closed, body)
          expect(res.status, body).toBe(200)
        }
        expect(yield* rotationOutcome(closed)).toBe("ok")
      }))
  }
)

type VerifyDelivery = (secrets: ReadonlyArray<string>, body: string, headers: Record<string, string>) => unknown

const isVerifier = (value: unknown): value is VerifyDelivery => typeof value === "function"

/**
 * The receiver code of docs/api.md's "Rotating a webhook's secret", as written there, loaded as a
 * module beside the project's own `standardwebhooks`.
 */
const documentedVerifier = Effect.gen(function*() {
  const docs = readFileSync(join(import.meta.dirname, "..", "docs", "api.md"), "utf8")
  const section = docs.indexOf("### Rotating a webhook's secret")
  const start = docs.indexOf("```ts\n", section)
  const end = docs.indexOf("\n```", start + 6)
  if (section < 0 || start < 0 || end < 0) return yield* Effect.dieMessage("no code block in the rotation section")
  const cache = join(import.meta.dirname, "..", "node_modules", ".cache")
  mkdirSync(cache, { recursive: true })
  const dir = yield* Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(cache, "docs-rotation-"))),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  )
  const file = join(dir, "verify.ts")
  writeFileSync(file, docs.slice(start + 6, end + 1))
  const loaded: unknown = yield* Effect.promise(() => import(file))
  const verifier: unknown = typeof loaded === "object" && loaded !== null && "verifyDelivery" in loaded
    ? loaded.verifyDelivery
    : undefined
  if (!isVerifier(verifier)) return yield* Effect.dieMessage("the documented code exports no verifyDelivery")
  return verifier
})

describe("the documented receiver", () => {
  it.live("verifies deliveries across a rotation with either secret, and not after a PUT replaced both", () =>
    Effect.gen(function*() {
      const verifyDelivery = yield* documentedVerifier
      const target = yield* receiver()
      const old = yield* register(target.url)
      const verifies = (secrets: ReadonlyArray<string>, request: Received) => {
        try {
          verifyDelivery(secrets, request.body, request.headers)
          return true
        } catch {
          return false
        }
      }
      const sentTest = Effect.gen(function*() {
        const before = (yield* target.received).length
        expect(yield* testEvent(workspaceHook)).toEqual({ delivered: true })
        const [request] = (yield* target.receivedAtLeast(before + 1)).slice(before)
        if (request === undefined) return yield* Effect.dieMessage("no test event")
        return request
      })
      const stranger = `whsec_${Buffer.alloc(32, 3).toString("base64")}`

      const before = yield* sentTest
      expect(verifies([old], before)).toBe(true)
      const { secret } = yield* rotated(workspaceHook)
      const during = yield* sentTest
      for (const [label, held] of Object.entries({ both: [secret, old], new: [secret], old: [old], oldAfterAnother: [stranger, old] })) {
        expect(verifies(held, during), label).toBe(true)
      }
      expect(verifies([stranger], during)).toBe(false)

      const registered = yield* register(target.url)
      const replaced = yield* sentTest
      expect(verifies([secret, old], replaced)).toBe(false)
      expect(verifies([registered], replaced)).toBe(true)
    }).pipe(Effect.provide(WebhookWorld()), Effect.scoped))
})
