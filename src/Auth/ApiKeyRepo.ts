import { SqlClient, SqlSchema } from "@effect/sql"
import { Clock, Effect, Option, Schema } from "effect"
import { makeId } from "../Domain/Ids.js"
import { toIso } from "../Domain/Time.js"
import { hashToken, newApiToken } from "./Token.js"
import type { ApiKeyContext } from "./CurrentKey.js"

const KeyRow = Schema.Struct({
  id: Schema.String,
  workspaceId: Schema.String,
  createdBy: Schema.String,
  surveyIds: Schema.NullOr(Schema.parseJson(Schema.Array(Schema.String))),
  role: Schema.NullOr(Schema.Literal("owner", "editor", "viewer")),
  apiAccess: Schema.Number,
  planId: Schema.String,
  burstLimit: Schema.Number,
  burstWindowMinutes: Schema.Number,
  dailyLimit: Schema.Number,
  monthlyLimit: Schema.Number
})

export type KeyLookup =
  | { readonly _tag: "Unknown" }
  | { readonly _tag: "NotMember" }
  | { readonly _tag: "NoApiAccess" }
  | { readonly _tag: "Valid"; readonly key: ApiKeyContext }

export class ApiKeyRepo extends Effect.Service<ApiKeyRepo>()("Auth/ApiKeyRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const findByHash = SqlSchema.findOne({
      Request: Schema.String,
      Result: KeyRow,
      execute: (tokenHash) =>
        sql`SELECT k.id, k.workspace_id, k.created_by, k.survey_ids, m.role,
                   op.api_access, cp.id AS plan_id, cp.burst_limit, cp.burst_window_minutes,
                   cp.daily_limit, cp.monthly_limit
            FROM api_keys k
            JOIN workspaces w ON w.id = k.workspace_id
            JOIN accounts o ON o.id = w.owner_account_id
            JOIN plans op ON op.id = o.plan_id
            JOIN accounts c ON c.id = k.created_by
            JOIN plans cp ON cp.id = c.plan_id
            LEFT JOIN members m ON m.workspace_id = k.workspace_id AND m.account_id = k.created_by
            WHERE k.token_hash = ${tokenHash} AND k.revoked = 0`
    })

    /**
     * Resolves a token hash to what the key may do right now (decisions §3). On every request's
     * path, so without a span of its own: the request's covers it.
     */
    const lookup = Effect.fnUntraced(function*(tokenHash: string) {
      const row = yield* findByHash(tokenHash).pipe(Effect.orDie)
      if (Option.isNone(row)) return { _tag: "Unknown" } as const
      const r = row.value
      if (r.role === null) return { _tag: "NotMember" } as const
      if (r.apiAccess === 0) return { _tag: "NoApiAccess" } as const
      const key: ApiKeyContext = {
        keyId: r.id,
        workspaceId: r.workspaceId,
        accountId: r.createdBy,
        role: r.role,
        surveyIds: r.surveyIds === null ? null : new Set(r.surveyIds),
        quota: {
          planId: r.planId,
          burstLimit: r.burstLimit,
          burstWindowMinutes: r.burstWindowMinutes,
          dailyLimit: r.dailyLimit,
          monthlyLimit: r.monthlyLimit
        }
      }
      return { _tag: "Valid", key } as const
    })

    /** Stores a new key (hashed) and returns its token: the only time the token is seen. */
    const create = Effect.fn("ApiKeyRepo.create")(function*(input: {
      readonly workspaceId: string
      readonly accountId: string
      readonly surveyIds: ReadonlyArray<string> | null
    }) {
      const token = newApiToken()
      const id = makeId("key")
      const now = toIso(yield* Clock.currentTimeMillis)
      yield* sql`INSERT INTO api_keys ${
        sql.insert({
          id,
          tokenHash: hashToken(token),
          workspaceId: input.workspaceId,
          createdBy: input.accountId,
          surveyIds: input.surveyIds === null ? null : JSON.stringify(input.surveyIds),
          revoked: 0,
          createdAt: now
        })
      }`.pipe(Effect.orDie)
      return { id, token } as const
    })

    /** Revokes by token or by key id; true when a live key was revoked. */
    const revoke = Effect.fn("ApiKeyRepo.revoke")(function*(tokenOrId: string) {
      const rows = yield* sql<{ id: string }>`UPDATE api_keys SET revoked = 1
        WHERE (id = ${tokenOrId} OR token_hash = ${hashToken(tokenOrId)}) AND revoked = 0
        RETURNING id`.pipe(Effect.orDie)
      return rows.length > 0
    })

    return { lookup, create, revoke } as const
  })
}) {}
