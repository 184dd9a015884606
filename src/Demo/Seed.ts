import { SqlClient } from "@effect/sql"
import { Clock, Effect, Schema } from "effect"
import { ApiKeyRepo } from "../Auth/ApiKeyRepo.js"
import { importFixtureInput } from "../Fixtures/Import.js"
import { DEMO_OWNER, DEMO_VIEWER, DEMO_WORKSPACE, demoFixture } from "./DemoData.js"

/**
 * Seeds the demo workspace into a database that lacks it, then mints an editor key and a
 * viewer key. Tokens are stored hashed, so each run mints fresh ones to print.
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
  const editor = yield* keys.create({ workspaceId: DEMO_WORKSPACE, accountId: DEMO_OWNER, surveyIds: null })
  const viewer = yield* keys.create({ workspaceId: DEMO_WORKSPACE, accountId: DEMO_VIEWER, surveyIds: null })
  return { seeded, editorToken: editor.token, viewerToken: viewer.token } as const
})
