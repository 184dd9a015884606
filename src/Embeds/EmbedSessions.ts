import { Clock, Data, Effect, Option } from "effect"
import { hashToken, newOpaqueToken } from "../Auth/Token.js"
import { makeId } from "../Domain/Ids.js"
import { toIso } from "../Domain/Time.js"
import { EmbedSessionRepo, type EmbedSessionRow } from "./EmbedSessionRepo.js"

/** An embed URL works for one hour and for one load (decisions §8). */
export const EMBED_LIFETIME_MILLIS = 3_600_000

/** Why an embed token cannot be loaded. */
export type EmbedRefusal = Data.TaggedEnum<{
  Unknown: {}
  Expired: {}
  Used: {}
}>
export const EmbedRefusal = Data.taggedEnum<EmbedRefusal>()

export class EmbedSessions extends Effect.Service<EmbedSessions>()("Embeds/EmbedSessions", {
  effect: Effect.gen(function*() {
    const sessions = yield* EmbedSessionRepo

    const create = Effect.fn("EmbedSessions.create")(function*(input: {
      readonly surveyId: string
      readonly workspaceId: string
      readonly externalUserId: string
    }) {
      const now = yield* Clock.currentTimeMillis
      const token = newOpaqueToken()
      const expiresAt = toIso(now + EMBED_LIFETIME_MILLIS)
      yield* sessions.insert({
        id: makeId("emb"),
        tokenHash: hashToken(token),
        surveyId: input.surveyId,
        workspaceId: input.workspaceId,
        externalUserId: input.externalUserId,
        createdAt: toIso(now),
        expiresAt
      })
      return { token, expiresAt } as const
    })

    /** The session behind a token, if it can still be loaded. */
    const lookup = Effect.fn("EmbedSessions.lookup")(function*(token: string) {
      const found = yield* sessions.findByTokenHash(hashToken(token))
      if (Option.isNone(found)) return yield* Effect.fail(EmbedRefusal.Unknown())
      const session = found.value
      const now = toIso(yield* Clock.currentTimeMillis)
      if (session.consumedAt !== null) return yield* Effect.fail(EmbedRefusal.Used())
      if (session.expiresAt <= now) return yield* Effect.fail(EmbedRefusal.Expired())
      return session
    })

    /** Marks the session loaded; only the first of concurrent loads wins. */
    const consume = Effect.fn("EmbedSessions.consume")(function*(session: EmbedSessionRow) {
      const now = toIso(yield* Clock.currentTimeMillis)
      const consumed = yield* sessions.consume(session.id, now)
      if (!consumed) return yield* Effect.fail(EmbedRefusal.Used())
    })

    return { create, lookup, consume } as const
  })
}) {}
