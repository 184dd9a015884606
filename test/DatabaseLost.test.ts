import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Redacted } from "effect"
import { createServer, connect, type Server, type Socket } from "node:net"
import { clientFor } from "./support/ApiClient.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { get, postgresDatabase, TestServer, testDatabase } from "./support/TestServer.js"
import { eventually } from "./support/WebhookReceiver.js"

/**
 * A TCP relay on 127.0.0.1 between the service and PostgreSQL that the test can cut (every open
 * connection reset, new ones refused, as when the database server goes away) and restore on the
 * same port.
 */
const relay = (target: { readonly host: string; readonly port: number }) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const sockets = new Set<Socket>()
      const track = (socket: Socket) => {
        sockets.add(socket)
        socket.on("close", () => sockets.delete(socket))
      }
      const open = (port: number) =>
        new Promise<Server>((resolve, reject) => {
          const server = createServer((client) => {
            const upstream = connect(target.port, target.host)
            track(client)
            track(upstream)
            client.on("error", () => upstream.destroy())
            upstream.on("error", () => client.destroy())
            client.pipe(upstream)
            upstream.pipe(client)
          })
          server.once("error", reject)
          server.listen(port, "127.0.0.1", () => resolve(server))
        })
      let server = await open(0)
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      const closeAll = () =>
        new Promise<void>((resolve) => {
          server.close(() => resolve())
          for (const socket of sockets) socket.destroy()
        })
      return {
        port,
        cut: () => closeAll(),
        restore: async () => {
          server = await open(port)
        },
        close: () => closeAll()
      }
    }),
    (r) => Effect.promise(() => r.close())
  )

// PostgreSQL only: a server that goes away and comes back. SQLite is a file that does not; its
// counterpart, a lock held past the busy timeout, is in test/Quota.test.ts.
describe.runIf(testDatabase === "postgres")("the database lost while serving", () => {
  it.live("answers 503 service_unavailable while PostgreSQL cannot be reached, and recovers by itself", () =>
    Effect.gen(function*() {
      const direct = new URL(yield* postgresDatabase())
      const cable = yield* relay({ host: direct.hostname, port: Number(direct.port) })
      const viaRelay = new URL(direct)
      viaRelay.port = String(cable.port)
      yield* Effect.gen(function*() {
        const api = yield* clientFor(TOKENS.editor)
        yield* api.surveys.list({ urlParams: {} })

        yield* Effect.promise(() => cable.cut())
        // Raw: the whole body, no field more, and its text free of the database password.
        for (const path of ["/api/v1/surveys", "/api/v1/surveys/srv_main/responses", "/api/v1/usage"]) {
          const res = yield* get(path, TOKENS.editor)
          expect([path, res.status]).toEqual([path, 503])
          expect(res.body).toEqual({ code: "service_unavailable", message: expect.any(String) })
          expect(res.text).not.toContain(direct.password || "postgres@")
        }

        yield* Effect.promise(() => cable.restore())
        // The pool opens new connections on its own; the first requests may still meet a
        // connection that died with the relay, so the wait ends on the first 200.
        const after = yield* eventually(Effect.either(api.surveys.list({ urlParams: {} })), Either.isRight, {
          tries: 200,
          everyMillis: 25
        })
        expect(Either.getOrThrow(after).data.map((s) => s.id)).toContain("srv_main")
      }).pipe(
        Effect.provide(TestServer(baseFixture, { databaseUrl: Redacted.make(viaRelay.toString()) }))
      )
    }).pipe(Effect.scoped))
})
