import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Either, Option, Schema } from "effect"
import { ResponseWriter } from "../src/Responses/ResponseWriter.js"
import { RespondentTokens } from "../src/Respondents/RespondentTokens.js"
import { TOKENS } from "./support/Fixtures.js"
import { respondentFixture } from "./support/RespondentFixtures.js"
import { bodyOf, call, decodeAs, TestServer } from "./support/TestServer.js"

const EmbedBody = Schema.Struct({ embedUrl: Schema.String })
const PageOpen = Schema.Struct({ respondentToken: Schema.String })
const ErasureBody = Schema.Struct({ externalUserId: Schema.String, deletedResponses: Schema.Number })
const Holder = Schema.Struct({ id: Schema.String })

const json = (value: unknown) => JSON.stringify(value)

layer(TestServer(respondentFixture))("a save checked before an erasure and written after it", (it) => {
  it.effect("is refused like an unknown token and stores nothing of the erased person", () =>
    Effect.gen(function*() {
      const created = yield* call("POST", "/api/v1/surveys/srv_short/embed-sessions", {
        token: TOKENS.editor,
        body: json({ externalUserId: "person-late" })
      })
      expect(created.status).toBe(201)
      const page = yield* call("GET", new URL(bodyOf(EmbedBody, created).embedUrl).pathname, {
        headers: { accept: "application/json" }
      })
      expect(page.status).toBe(200)
      const token = bodyOf(PageOpen, page).respondentToken

      // The save's first step, as the respondent API runs it: the token is checked...
      const respondent = yield* Effect.flatMap(RespondentTokens, (tokens) => tokens.resolve(token))
      expect(Option.isSome(respondent)).toBe(true)
      if (Option.isNone(respondent)) return

      // ...then the person is erased...
      const erased = yield* call("POST", "/api/v1/erasures", {
        token: TOKENS.editor,
        body: json({ externalUserId: "person-late" })
      })
      expect(erased.status).toBe(200)
      expect(bodyOf(ErasureBody, erased).deletedResponses).toBe(0)

      // ...and only then does the save reach its transaction.
      const writer = yield* ResponseWriter
      const saved = yield* Effect.either(writer.create(respondent.value, {
        answers: [{ questionId: "q_short_text", values: ["written after the erasure"] }],
        finished: true
      }))
      expect(Either.isLeft(saved) ? saved.left._tag : "saved").toBe("Unauthorized")

      const sql = yield* SqlClient.SqlClient
      const stored = decodeAs(
        Schema.Array(Holder),
        yield* sql`SELECT id FROM responses WHERE external_user_id = 'person-late'`.pipe(Effect.orDie)
      )
      expect(stored).toEqual([])
      const events = decodeAs(
        Schema.Array(Holder),
        yield* sql`SELECT id FROM events WHERE payload LIKE '%person-late%'`.pipe(Effect.orDie)
      )
      expect(events).toEqual([])
      // Over HTTP the same token is refused too.
      const again = yield* call("POST", "/respond/v1/responses", {
        token,
        body: json({ answers: [{ questionId: "q_short_text", values: ["x"] }], finished: true })
      })
      expect(again.status).toBe(401)
    }))
})
