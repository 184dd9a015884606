import { SqlClient } from "@effect/sql"
import { Clock, Effect, Schema } from "effect"
import { ApiKeyRepo } from "../Auth/ApiKeyRepo.js"
import { importFixtureInput } from "../Fixtures/Import.js"
import { DEMO_OWNER, DEMO_VIEWER, DEMO_WORKSPACE, demoFixture } from "./DemoData.js"

/**
 * Seeds the demo workspace into a database that lacks it, then mints an editor key and a
 * viewer key. Tokens are stored hashed, so each run mints fresh ones to print, and revokes in the
 * same transaction the keys earlier runs minted (the demo accounts' keys to the whole demo
 * workspace), which nobody can print again.
 */
export const seedDemo = Effect.fn("Demo.seed")(function*() {
  const sql = yield* SqlClient.SqlClient
  const keys = yield* ApiKeyRepo
  const existing = yield* sql`SELECT id FROM workspaces WHERE id = ${DEMO_WORKSPACE}`.pipe(
    Effect.flatMap(Schema.decodeUnknown(Schema.Array(Schema.Struct({ id: Schema.String }))))
  )
  const seeded = existing.length === 0
  if (seeded) {
    yield* importFixtureInput(demoFixture(yield* Clock.currentTimeMillis))
  }
  return yield* sql.withTransaction(Effect.gen(function*() {
    yield* sql`UPDATE api_keys SET revoked = 1
      WHERE workspace_id = ${DEMO_WORKSPACE} AND created_by IN (${DEMO_OWNER}, ${DEMO_VIEWER})
        AND survey_ids IS NULL AND revoked = 0`
    const editor = yield* keys.create({ workspaceId: DEMO_WORKSPACE, accountId: DEMO_OWNER, surveyIds: null })
    const viewer = yield* keys.create({ workspaceId: DEMO_WORKSPACE, accountId: DEMO_VIEWER, surveyIds: null })
    return { seeded, editorToken: editor.token, viewerToken: viewer.token } as const
  }))
})
