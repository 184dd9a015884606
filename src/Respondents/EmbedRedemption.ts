import { Effect } from "effect"
import type { EmbedSessionRow } from "../Embeds/EmbedSessionRepo.js"
import { EmbedSessions } from "../Embeds/EmbedSessions.js"
import { Transactions } from "../Sql/Transactions.js"
import { RespondentTokens } from "./RespondentTokens.js"

/**
 * The load of an embed URL (`/embed/{token}`, decisions §8): the session is spent together with
 * the respondent token it hands out, in one transaction, so that a load either yields a token or
 * leaves the session loadable.
 */
export class EmbedRedemption extends Effect.Service<EmbedRedemption>()("Respondents/EmbedRedemption", {
  effect: Effect.gen(function*() {
    const transactions = yield* Transactions
    const embeds = yield* EmbedSessions
    const tokens = yield* RespondentTokens

    /** The respondent token of a looked-up session; fails `Used` when another load spent it first. */
    const redeem = Effect.fn("EmbedRedemption.redeem")((session: EmbedSessionRow) =>
      embeds.consume(session).pipe(
        Effect.zipRight(tokens.issue({
          surveyId: session.surveyId,
          embedSessionId: session.id,
          externalUserId: session.externalUserId
        })),
        transactions.withinOrDie
      )
    )

    return { redeem } as const
  })
}) {}
