import { expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option, Schema } from "effect"
import { EmbedSessions } from "../src/Embeds/EmbedSessions.js"
import { RespondentPurge, RespondentPurgeLive } from "../src/Respondents/RespondentPurge.js"
import { RespondentTokens } from "../src/Respondents/RespondentTokens.js"
import { respondentFixture } from "./support/RespondentFixtures.js"
import { decodeAs, TestDatabase } from "./support/TestServer.js"
import { Count } from "./support/StoredRows.js"
import { advance } from "./support/Advance.js"

const Services = TestDatabase(respondentFixture)

const embedCount = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.map(
    sql`SELECT count(*) AS n FROM embed_sessions`.pipe(Effect.orDie),
    (rows) => decodeAs(Schema.Array(Count), rows)[0]?.n ?? -1
  ))

it.effect("expired respondent tokens go after a day, spent embed sessions after thirty more", () =>
  Effect.gen(function*() {
    const tokens = yield* RespondentTokens
    const embeds = yield* EmbedSessions
    const purge = yield* RespondentPurge
    const publicToken = yield* tokens.issue({ surveyId: "srv_all", embedSessionId: null, externalUserId: null })
    const created = yield* embeds.create({ surveyId: "srv_all", workspaceId: "ws_a", externalUserId: "u" })
    const session = yield* embeds.lookup(created.token)
    yield* embeds.consume(session)
    yield* tokens.issue({ surveyId: "srv_all", embedSessionId: session.id, externalUserId: "u" })

    yield* advance("23 hours")
    expect(yield* purge.run()).toEqual({ tokens: 0, embedSessions: 0 })
    expect(Option.isSome(yield* tokens.resolve(publicToken))).toBe(true)

    yield* advance("1 hour")
    expect(Option.isNone(yield* tokens.resolve(publicToken))).toBe(true)
    expect(yield* purge.run()).toEqual({ tokens: 2, embedSessions: 0 })
    expect(yield* embedCount).toBe(1)

    yield* advance("30 days")
    expect(yield* purge.run()).toEqual({ tokens: 0, embedSessions: 1 })
    expect(yield* embedCount).toBe(0)
  }).pipe(Effect.provide(Services)))

it.scoped("the purge runs in the background every hour", () =>
  Effect.gen(function*() {
    const tokens = yield* RespondentTokens
    yield* tokens.issue({ surveyId: "srv_all", embedSessionId: null, externalUserId: null })
    yield* Layer.build(RespondentPurgeLive)
    const sql = yield* SqlClient.SqlClient
    const count = Effect.map(
      sql`SELECT count(*) AS n FROM respondent_tokens`.pipe(Effect.orDie),
      (rows) => decodeAs(Schema.Array(Count), rows)[0]?.n ?? -1
    )
    expect(yield* count).toBe(1)
    yield* advance("25 hours")
    expect(yield* count).toBe(0)
  }).pipe(Effect.provide(Services)))
