/**
 * Measured shortcut: a known key's lookup is remembered with the access generation it was read at,
 * skipping the seven-table lookup while the generation stands (one indexed row read on the
 * `Reader`). Triggers move the generation on every write to the tables the lookup reads, from any
 * connection or process (migration 0007), so a remembered lookup is never used stale
 * (test/AccessChanges.test.ts, test/Auth.test.ts). Measurement:
 * docs/performance.md#measured-shortcuts, "Remembered key lookups".
 */
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Schema } from "effect"
import { makeId, SurveyId, workspaceId } from "../Domain/Ids.js"
import { Reader } from "../Sql/Reader.js"
import { AccessGenerationColumns, accessGenerationSql, KeyLookupColumns, keyLookupSql } from "./KeyLookupSql.js"
import { toIso } from "../Domain/Time.js"
import { hashToken, newApiToken } from "./Token.js"
import type { ApiKeyContext } from "./CurrentKey.js"

/** Keys remembered at most; past this the memory starts over. */
const MAX_REMEMBERED = 10_000

const decodeSurveyIds = Schema.decodeUnknownSync(Schema.parseJson(Schema.Array(SurveyId)))

export type KeyLookup =
  | { readonly _tag: "Unknown" }
  | { readonly _tag: "NotMember" }
  | { readonly _tag: "NoApiAccess" }
  | { readonly _tag: "Valid"; readonly key: ApiKeyContext }

export class ApiKeyRepo extends Effect.Service<ApiKeyRepo>()("Auth/ApiKeyRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const reader = yield* Reader

    /** What a row of `keyLookupSql` (or its absence) allows. */
    const decide = (r: ReadonlyArray<unknown> | undefined): KeyLookup => {
      if (r === undefined) return { _tag: "Unknown" }
      const row = KeyLookupColumns.read(r)
      if (row.role === null) return { _tag: "NotMember" }
      if (!row.apiAccess) return { _tag: "NoApiAccess" }
      const key: ApiKeyContext = {
        keyId: row.id,
        workspaceId: workspaceId(row.workspaceId),
        accountId: row.createdBy,
        role: row.role,
        surveyIds: row.surveyIds === null ? null : new Set(decodeSurveyIds(row.surveyIds)),
        quota: {
          planId: row.planId,
          burstLimit: row.burstLimit,
          burstWindowMinutes: row.burstWindowMinutes,
          dailyLimit: row.dailyLimit,
          monthlyLimit: row.monthlyLimit
        }
      }
      return { _tag: "Valid", key }
    }

    // Lookups of known keys, each with the access generation it was read at. The generation moves
    // with every write to the tables the lookup reads, from any connection or process (migration
    // 0007), and is read before the lookup, so a remembered answer is never older than its
    // generation. Unknown tokens are not remembered: guessing cannot fill the memory.
    const remembered = new Map<string, { readonly generation: number; readonly found: KeyLookup }>()

    /**
     * Resolves a token hash to what the key may do right now (decisions §3): one single-row read
     * of the access generation, and the seven-table lookup only when a write may have changed the
     * answer. On every request's path, so without a span of its own: the request's covers it.
     */
    const lookup = (tokenHash: string): Effect.Effect<KeyLookup> =>
      Effect.flatMap(reader.values(accessGenerationSql, []), (rows) => {
        const generation = AccessGenerationColumns.at.value(rows[0] ?? [])
        const known = remembered.get(tokenHash)
        if (known !== undefined && known.generation === generation) return Effect.succeed(known.found)
        return Effect.map(reader.values(keyLookupSql, [tokenHash]), (found) => {
          const decided = decide(found[0])
          if (decided._tag !== "Unknown") {
            if (remembered.size >= MAX_REMEMBERED) remembered.clear()
            remembered.set(tokenHash, { generation, found: decided })
          }
          return decided
        })
      }).pipe(Effect.orDie)

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
      const rows = yield* sql`UPDATE api_keys SET revoked = 1
        WHERE (id = ${tokenOrId} OR token_hash = ${hashToken(tokenOrId)}) AND revoked = 0
        RETURNING id`.pipe(Effect.orDie)
      return rows.length > 0
    })

    /**
     * Revokes the live keys to the whole of `workspaceId` that these accounts created (keys
     * limited to some surveys stay).
     */
    const revokeUnlimited = (workspaceId: string, accountIds: ReadonlyArray<string>) =>
      sql`UPDATE api_keys SET revoked = 1
        WHERE workspace_id = ${workspaceId} AND created_by IN ${sql.in(accountIds)}
          AND survey_ids IS NULL AND revoked = 0`.pipe(Effect.asVoid, Effect.withSpan("ApiKeyRepo.revokeUnlimited"))

    return { lookup, create, revoke, revokeUnlimited } as const
  })
}) {}
