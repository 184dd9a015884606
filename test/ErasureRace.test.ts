import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Either, Option, Schema } from "effect"
import { ResponseWriter } from "../src/Responses/ResponseWriter.js"
import { RespondentTokens } from "../src/Respondents/RespondentTokens.js"
import { SurveyId } from "../src/Domain/Ids.js"
import { EmbedSessionRequest } from "../src/Embeds/Api.js"
import { clientFor } from "./support/ApiClient.js"
import { TOKENS } from "./support/Fixtures.js"
import { respondentFixture } from "./support/RespondentFixtures.js"
import { bodyOf, call, decodeAs, TestServer } from "./support/TestServer.js"

const PageOpen = Schema.Struct({ respondentToken: Schema.String })
const Holder = Schema.Struct({ id: Schema.String })

layer(TestServer(respondentFixture))("a save checked before an erasure and written after it", (it) => {
  it.effect("is refused like an unknown token and stores nothing of the erased person", () =>
    Effect.gen(function*() {
      const api = yield* clientFor(TOKENS.editor)
      const created = yield* api.embedSessions.create({
        path: { id: SurveyId.make("srv_short") },
        payload: new EmbedSessionRequest({ externalUserId: "person-late" }),
        headers: {}
      })
      // Raw: the embed page is outside the HttpApi.
      const page = yield* call("GET", new URL(created.embedUrl).pathname, {
        headers: { accept: "application/json" }
      })
      expect(page.status).toBe(200)
      const token = bodyOf(PageOpen, page).respondentToken

      // The save's first step, as the respondent API runs it: the token is checked...
      const respondent = yield* Effect.flatMap(RespondentTokens, (tokens) => tokens.resolve(token))
      expect(Option.isSome(respondent)).toBe(true)
      if (Option.isNone(respondent)) return

      // ...then the person is erased...
      const erased = yield* api.erasures.create({ payload: { externalUserId: "person-late" } })
      expect(erased.deletedResponses).toBe(0)

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
      const respondentApi = yield* clientFor(token)
      const again = yield* Effect.flip(respondentApi.respondent.start({
        payload: { answers: [{ questionId: "q_short_text", values: ["x"] }], finished: true },
        headers: {}
      }))
      expect(again._tag).toBe("Unauthorized")
    }))
})
