import { HttpServer } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Deferred, Duration, Effect, Either, Fiber, Schema, Stream, SubscriptionRef } from "effect"
import { connect, type Socket } from "node:net"
import { WebhookBackgroundLive } from "./support/WebhookBackground.js"
import { AppConfig } from "../src/Config.js"
import type { FixtureInput } from "../src/Fixtures/Fixture.js"
import { SurveyId } from "../src/Domain/Ids.js"
import { ExportSlots, type HeldSlots } from "../src/Responses/ExportSlots.js"
import { clientFor, outcomeOf } from "./support/ApiClient.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { onOutside, outsideConnection } from "./support/OutsideConnection.js"
import { bodyOf, bunTestServer, call, decodeAs, ErrorBody, testDatabase, TestServer } from "./support/TestServer.js"
import { receiver } from "./support/WebhookReceiver.js"
import { register } from "./support/WebhookWorld.js"

const ANALYST = "sk_test_analyst_aaaaaaaaaaaaaaa"
const ROWS = 4000
/** About 4 KB a row: an export of some 16 MB, far more than a socket's buffers hold for a client that does not read. */
const longText = "x".repeat(4000)
const at = (n: number) => new Date(Date.UTC(2026, 2, 1) + n * 1000).toISOString()

/** The base fixture, a third account of workspace ws_a with a key, and a survey whose export is large. */
const exportFixture: FixtureInput = {
  ...baseFixture,
  accounts: [...(baseFixture.accounts ?? []), { id: "acc_analyst", planId: "roomy" }],
  members: [...(baseFixture.members ?? []), { workspaceId: "ws_a", accountId: "acc_analyst", role: "viewer" }],
  apiKeys: [
    ...(baseFixture.apiKeys ?? []),
    { token: ANALYST, workspaceId: "ws_a", createdBy: "acc_analyst", surveyIds: null, revoked: false }
  ],
  surveys: [
    ...(baseFixture.surveys ?? []),
    {
      id: "srv_export",
      workspaceId: "ws_a",
      title: "Large",
      status: "published",
      createdAt: at(0),
      updatedAt: at(0),
      questions: [{ id: "e_text", type: "textarea", label: "Text", order: 1 }]
    }
  ],
  responses: [
    ...(baseFixture.responses ?? []),
    ...Array.from({ length: ROWS }, (_, i) => ({
      id: `rsp_export_${String(i).padStart(5, "0")}`,
      surveyId: "srv_export",
      createdAt: at(1000 + i),
      completedAt: at(1000 + i),
      answers: [{ questionId: "e_text", values: [`${i} ${longText}`] }]
    }))
  ]
}

const EXPORT = "/api/v1/surveys/srv_export/responses.csv"

/** The whole export of srv_export through the typed client, as `token` asks for it. */
const wholeExport = (token: string) =>
  Effect.flatMap(clientFor(token), (api) => api.responses.exportCsv({ path: { id: SurveyId.make("srv_export") }, urlParams: {} }))

/** `count` reads of the survey list at once as `token`: how each ended. */
const surveyReads = (token: string, count: number) =>
  Effect.flatMap(clientFor(token), (api) =>
    Effect.all(Array.from({ length: count }, () => outcomeOf(api.surveys.list({ urlParams: {} }))), {
      concurrency: "unbounded"
    }))

/** An export asked for over a raw connection: its status and headers, and the connection, paused once they arrived. */
interface OpenExport {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly socket: Socket
  /** Everything the server sent after the headers, once the connection closed. */
  readonly rest: Promise<string>
}

/**
 * Asks for `path` on a connection of its own and stops reading as soon as the status and headers
 * arrived: a client that does not read, so a streamed answer stays open on the server.
 */
const openExport = (port: number, token: string, path = EXPORT) =>
  Effect.async<OpenExport>((resume) => {
    const socket = connect(port, "127.0.0.1")
    const chunks: Array<Buffer> = []
    let answered = false
    let closed: (body: string) => void = () => {}
    const rest = new Promise<string>((resolve) => (closed = resolve))
    socket.on("error", () => {})
    socket.on("close", () => {
      const text = Buffer.concat(chunks).toString("utf8")
      closed(text.slice(text.indexOf("\r\n\r\n") + 4))
    })
    socket.on("data", (chunk) => {
      chunks.push(Buffer.from(chunk))
      if (answered) return
      const text = Buffer.concat(chunks).toString("utf8")
      const end = text.indexOf("\r\n\r\n")
      if (end === -1) return
      answered = true
      socket.pause()
      const [statusLine = "", ...lines] = text.slice(0, end).split("\r\n")
      const headers: Record<string, string> = {}
      for (const line of lines) {
        const colon = line.indexOf(":")
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
      }
      resume(Effect.succeed({ status: Number(statusLine.split(" ")[1]), headers, socket, rest }))
    })
    socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`)
  })

/** The body of a refused export, read to its end. */
const refusal = (answer: OpenExport) =>
  Effect.promise(() => {
    answer.socket.resume()
    return answer.rest
  }).pipe(Effect.map((text) => decodeAs(ErrorBody, JSON.parse(text))))

const serverPort = Effect.map(HttpServer.HttpServer, (server) => server.address._tag === "TcpAddress" ? server.address.port : 0)

/** Waits until the export slots held satisfy `check`: a signal from the slots themselves, bounded for a failing test. */
const slotsWhere = (check: (held: HeldSlots) => boolean) =>
  Effect.flatMap(ExportSlots, (slots) =>
    slots.held.changes.pipe(Stream.takeUntil(check), Stream.runLast)).pipe(
      Effect.timeoutFail({ duration: Duration.seconds(30), onTimeout: () => new Error("export slots never reached the expected state") }),
      Effect.orDie
    )

const heldNow = Effect.flatMap(ExportSlots, (slots) => SubscriptionRef.get(slots.held))

const RespondentPage = Schema.Struct({ respondentToken: Schema.String })
const Envelope = Schema.Struct({ type: Schema.String, data: Schema.Struct({ responseId: Schema.String }) })

/** A respondent's finished save of srv_main through the respondent API (the page raw: it is outside the HttpApi); its response id. */
const respondentSave = Effect.gen(function*() {
  const page = yield* call("GET", "/s/srv_main", { headers: { accept: "application/json" } })
  const respondent = yield* clientFor(bodyOf(RespondentPage, page).respondentToken)
  const saved = yield* respondent.respondent.start({
    payload: { answers: [{ questionId: "q_pick", values: ["a"] }], finished: true },
    headers: {}
  })
  return saved.responseId
})

/** A client that reads nothing holds its export open: the server may not stop it for being idle during the test. */
const quietClients = { httpServer: bunTestServer({ idleTimeout: 0 }) }

describe("CSV export bounds", () => {
  it.live(
    "50 exports from one key: 2 stream, the rest are refused; saves and webhook deliveries go on meanwhile; a client that leaves frees its slot",
    () =>
      Effect.gen(function*() {
        const port = yield* serverPort
        const target = yield* receiver()
        yield* register(target.url)

        const answers = yield* Effect.all(Array.from({ length: 50 }, () => openExport(port, TOKENS.editor)), {
          concurrency: "unbounded"
        })
        const streaming = answers.filter((a) => a.status === 200)
        const refused = answers.filter((a) => a.status !== 200)
        expect(streaming).toHaveLength(2)
        expect(refused).toHaveLength(48)
        for (const answer of refused) {
          expect(answer.status).toBe(503)
          expect(answer.headers["retry-after"]).toBe("5")
          expect(answer.headers["ratelimit-limit"]).toBeDefined()
          const body = yield* refusal(answer)
          expect(body).toEqual({
            code: "service_unavailable",
            message: "This account already runs 2 CSV exports; retry once one has finished."
          })
        }
        expect((yield* heldNow).byAccount.get("acc_owner")).toBe(2)

        // Another account takes the process's last two slots; a third account is then refused with 503.
        const analyst = yield* Effect.all([openExport(port, ANALYST), openExport(port, ANALYST)], { concurrency: "unbounded" })
        expect(analyst.map((a) => a.status)).toEqual([200, 200])
        const full = yield* openExport(port, TOKENS.viewer)
        expect(full.status).toBe(503)
        expect(full.headers["retry-after"]).toBe("5")
        expect(yield* refusal(full)).toEqual({
          code: "service_unavailable",
          message: "The service runs as many CSV exports as it can; retry shortly."
        })

        // While four exports stay open, a respondent saves, its event reaches the webhook, and the API answers.
        const saved = yield* respondentSave
        const [delivered] = yield* target.receivedAtLeast(1).pipe(Effect.timeout(Duration.seconds(30)), Effect.orDie)
        const event = decodeAs(Envelope, JSON.parse(delivered?.body ?? "null"))
        expect(event).toMatchObject({ type: "response.completed", data: { responseId: saved } })
        const reads = yield* surveyReads(TOKENS.viewer, 20)
        expect(reads).toEqual(reads.map(() => "ok"))
        // The exports were open all along: none of them had ended.
        expect((yield* heldNow).total).toBe(4)

        // A client that goes away frees its slot, and the account's next export streams to its end.
        streaming[0]?.socket.destroy()
        yield* slotsWhere((held) => held.total === 3)
        const again = yield* wholeExport(TOKENS.editor)
        const lines = again.split("\r\n")
        expect(lines).toHaveLength(ROWS + 2)
        expect(lines[ROWS]).toContain(`${ROWS - 1} x`)
        yield* slotsWhere((held) => held.total === 3)

        for (const answer of [...streaming, ...analyst]) answer.socket.destroy()
        yield* slotsWhere((held) => held.total === 0)
      }).pipe(Effect.scoped, Effect.provide(TestServer(exportFixture, {}, { ...quietClients, background: WebhookBackgroundLive })))
  )

  it.live("a client that stops reading holds its slot only until the server's idle timeout closes its connection", () =>
    Effect.gen(function*() {
      const port = yield* serverPort
      const open = yield* openExport(port, TOKENS.editor)
      expect(open.status).toBe(200)
      expect((yield* heldNow).total).toBe(1)
      yield* slotsWhere((held) => held.total === 0)
      open.socket.resume()
      const body = yield* Effect.promise(() => open.rest)
      expect(body.endsWith("0\r\n\r\n")).toBe(false)
    }).pipe(Effect.scoped, Effect.provide(TestServer(exportFixture, {}, { httpServer: bunTestServer({ idleTimeout: 1 }) }))))

  it.live.runIf(testDatabase === "sqlite")(
    "an export reads on a connection of its own: it streams to its end while a transaction holds the service's connection",
    () =>
      Effect.gen(function*() {
        const port = yield* serverPort
        const sql = yield* SqlClient.SqlClient
        const open = yield* openExport(port, TOKENS.editor)
        expect(open.status).toBe(200)
        const held = yield* Deferred.make<void>()
        const done = yield* Deferred.make<void>()
        const writer = yield* Effect.fork(
          sql.withTransaction(Effect.zipRight(Deferred.succeed(held, undefined), Deferred.await(done)))
        )
        yield* Deferred.await(held)
        open.socket.resume()
        const body = yield* Effect.promise(() => open.rest).pipe(
          Effect.timeoutFail({ duration: Duration.seconds(30), onTimeout: () => new Error("the export did not end") }),
          Effect.orDie
        )
        expect(body.endsWith("0\r\n\r\n")).toBe(true)
        expect(body).toContain(`rsp_export_${String(ROWS - 1).padStart(5, "0")}`)
        yield* Deferred.succeed(done, undefined)
        yield* Fiber.join(writer)
      }).pipe(Effect.scoped, Effect.provide(TestServer(exportFixture, {}, quietClients)))
  )

  it.live.runIf(testDatabase === "postgres")(
    "export pages wait on a pool of their own: the API answers while they wait, and a page past its timeout cuts its export short",
    () =>
      Effect.gen(function*() {
        const port = yield* serverPort
        const holder = yield* outsideConnection
        // Every export page waits for this lock; the API's other reads do not touch the table.
        yield* onOutside(holder, "BEGIN")
        yield* onOutside(holder, "LOCK TABLE answers IN ACCESS EXCLUSIVE MODE")

        const open = yield* Effect.all(
          [TOKENS.editor, TOKENS.editor, ANALYST, ANALYST].map((token) => openExport(port, token)),
          { concurrency: "unbounded" }
        )
        expect(open.map((a) => a.status)).toEqual([200, 200, 200, 200])
        // More exports than the main pool has connections wait for their pages; the main pool still serves.
        const reads = yield* surveyReads(TOKENS.viewer, 10)
        expect(reads).toEqual(reads.map(() => "ok"))

        // Each page gives up at its timeout: the download ends without its last chunk, and the slot is free.
        const bodies = yield* Effect.forEach(open, (answer) =>
          Effect.promise(() => {
            answer.socket.resume()
            return answer.rest
          }))
        for (const body of bodies) {
          expect(body).toContain("responseId,surveyId,externalUserId")
          expect(body.endsWith("0\r\n\r\n")).toBe(false)
          expect(body).not.toContain("rsp_export_")
        }
        yield* slotsWhere((held) => held.total === 0)

        yield* onOutside(holder, "ROLLBACK")
        const whole = yield* wholeExport(TOKENS.editor)
        expect(whole.split("\r\n")).toHaveLength(ROWS + 2)
      }).pipe(
        Effect.scoped,
        Effect.provide(
          TestServer(exportFixture, {
            databasePoolSize: 2,
            databasePoolTimeoutMs: 1000,
            exportPageTimeoutMs: 1000
          }, quietClients)
        )
      )
  )
})

describe("EXPORT_* settings", () => {
  const read = (env: Record<string, string>) =>
    AppConfig.fromEnv().pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))

  it.effect("are read as whole numbers in their range, and left to their defaults when unset", () =>
    Effect.gen(function*() {
      const unset = yield* read({})
      expect([unset.exportConcurrency, unset.exportConcurrencyPerAccount, unset.exportPageTimeoutMs]).toEqual([undefined, undefined, undefined])
      const set = yield* read({ EXPORT_CONCURRENCY: "8", EXPORT_CONCURRENCY_PER_ACCOUNT: "3", EXPORT_PAGE_TIMEOUT_MS: "2500" })
      expect([set.exportConcurrency, set.exportConcurrencyPerAccount, set.exportPageTimeoutMs]).toEqual([8, 3, 2500])
      for (const bad of [{ EXPORT_CONCURRENCY: "0" }, { EXPORT_CONCURRENCY_PER_ACCOUNT: "1.5" }, { EXPORT_PAGE_TIMEOUT_MS: "-1" }]) {
        expect(Either.isLeft(yield* Effect.either(read(bad))), JSON.stringify(bad)).toBe(true)
      }
    }))
})
