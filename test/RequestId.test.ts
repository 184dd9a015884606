import { HttpApp, HttpServerResponse } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, HashMap, Logger } from "effect"
import { Drain } from "../src/Background/Drain.js"
import { addAnswerHeaders, withRequestId } from "../src/Http/RequestId.js"
import { serveMiddleware } from "../src/Http/Server.js"

/** The service's outer middleware around an app that logs, with a logger that keeps each line's requestId. */
const serving = (app: HttpApp.Default<unknown>) => {
  const lines: Array<{ message: unknown; requestId: unknown }> = []
  const capture = Logger.make(({ annotations, message }) => {
    lines.push({ message, requestId: HashMap.get(annotations, "requestId").pipe((o) => o._tag === "Some" ? o.value : null) })
  })
  const { dispose, handler } = HttpApp.toWebHandlerLayer(
    serveMiddleware(app, Effect.runSync(Effect.provide(Drain, Drain.Default))),
    Logger.replace(Logger.defaultLogger, withRequestId(capture))
  )
  return { lines, dispose, handler }
}

const logsTwice = Effect.log("first").pipe(
  Effect.zipRight(Effect.fork(Effect.log("from a forked fiber")).pipe(Effect.flatMap((fiber) => fiber.await))),
  Effect.as(HttpServerResponse.text("ok"))
)

describe("request ids", () => {
  it("are answered in x-request-id and logged with every line the request writes, forked fibers included", async () => {
    const { dispose, handler, lines } = serving(logsTwice)
    try {
      const given = await handler(new Request("http://localhost/x", { headers: { "x-request-id": "client-chosen-id-1" } }))
      expect(given.headers.get("x-request-id")).toBe("client-chosen-id-1")
      const made = await handler(new Request("http://localhost/x", { headers: { "x-request-id": "bad id!" } }))
      const madeId = made.headers.get("x-request-id")
      expect(madeId).toMatch(/^req_[A-Za-z0-9]{16}$/)
      const other = await handler(new Request("http://localhost/x"))
      expect(other.headers.get("x-request-id")).toMatch(/^req_[A-Za-z0-9]{16}$/)
      expect(other.headers.get("x-request-id")).not.toBe(madeId)

      expect(lines).toEqual([
        { message: ["first"], requestId: "client-chosen-id-1" },
        { message: ["from a forked fiber"], requestId: "client-chosen-id-1" },
        { message: ["first"], requestId: madeId },
        { message: ["from a forked fiber"], requestId: madeId },
        { message: ["first"], requestId: other.headers.get("x-request-id") },
        { message: ["from a forked fiber"], requestId: other.headers.get("x-request-id") }
      ])
    } finally {
      await dispose()
    }
  })

  it("are logged with the failure of a request the service could not answer", async () => {
    const { dispose, handler, lines } = serving(Effect.die(new Error("boom")))
    try {
      const answer = await handler(new Request("http://localhost/x", { headers: { "x-request-id": "failing-request-1" } }))
      expect(answer.status).toBe(500)
      expect(await answer.json()).toMatchObject({ code: "internal_error" })
      expect(answer.headers.get("x-request-id")).toBe("failing-request-1")
      expect(lines).toEqual([{ message: ["unhandled error"], requestId: "failing-request-1" }])
    } finally {
      await dispose()
    }
  })

  it("are answered beside the headers added while the request was served, whatever answered it", async () => {
    const added = Effect.zipRight(
      addAnswerHeaders({ "ratelimit-limit": "5", "ratelimit-remaining": "4" }),
      addAnswerHeaders({ "ratelimit-remaining": "3", "retry-after": "7" })
    )
    const answered = serving(Effect.zipRight(added, Effect.as(Effect.log("served"), HttpServerResponse.text("ok"))))
    const failed = serving(Effect.zipRight(added, Effect.die(new Error("boom"))))
    try {
      for (const { handler } of [answered, failed]) {
        const answer = await handler(new Request("http://localhost/x", { headers: { "x-request-id": "headers-request-1" } }))
        expect([...answer.headers.entries()].filter(([name]) => name !== "content-type" && name !== "content-length")).toEqual([
          ["ratelimit-limit", "5"],
          ["ratelimit-remaining", "3"],
          ["retry-after", "7"],
          ["x-request-id", "headers-request-1"]
        ])
      }
      const other = await answered.handler(new Request("http://localhost/x"))
      expect(other.headers.has("ratelimit-limit")).toBe(true)
      const plain = serving(HttpServerResponse.text("ok"))
      const none = await plain.handler(new Request("http://localhost/x"))
      expect(none.headers.has("ratelimit-limit")).toBe(false)
      await plain.dispose()
    } finally {
      await answered.dispose()
      await failed.dispose()
    }
  })

  it("are not added to lines logged outside a request", () => {
    const lines: Array<unknown> = []
    const capture = Logger.make(({ annotations }) => lines.push(HashMap.has(annotations, "requestId")))
    Effect.runSync(Effect.log("background").pipe(Effect.provide(Logger.replace(Logger.defaultLogger, withRequestId(capture)))))
    expect(lines).toEqual([false])
  })
})
