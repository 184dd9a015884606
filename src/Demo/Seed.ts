import { Clock, Effect } from "effect"
import { ApiKeyRepo } from "../Auth/ApiKeyRepo.js"
import { importFixtureInput } from "../Fixtures/Import.js"
import { ImportRepo } from "../Fixtures/ImportRepo.js"
import { Transactions } from "../Sql/Transactions.js"
import { DEMO_OWNER, DEMO_VIEWER, DEMO_WORKSPACE, demoFixture } from "./DemoData.js"

/**
 * Seeds the demo workspace into a database that lacks it, then mints an editor key and a
 * viewer key. Tokens are stored hashed, so each run mints fresh ones to print, and revokes in the
 * same transaction the keys earlier runs minted (the demo accounts' keys to the whole demo
 * workspace), which nobody can print again.
 */
export const seedDemo = Effect.fn("Demo.seed")(function*() {
  const transactions = yield* Transactions
  const keys = yield* ApiKeyRepo
  const seeded = !(yield* (yield* ImportRepo).workspaceExists(DEMO_WORKSPACE))
  if (seeded) {
    yield* importFixtureInput(demoFixture(yield* Clock.currentTimeMillis))
  }
  return yield* transactions.within(Effect.gen(function*() {
    yield* keys.revokeUnlimited(DEMO_WORKSPACE, [DEMO_OWNER, DEMO_VIEWER])
    const editor = yield* keys.create({ workspaceId: DEMO_WORKSPACE, accountId: DEMO_OWNER, surveyIds: null })
    const viewer = yield* keys.create({ workspaceId: DEMO_WORKSPACE, accountId: DEMO_VIEWER, surveyIds: null })
    return { seeded, editorToken: editor.token, viewerToken: viewer.token } as const
  }))
}, Effect.provide(ImportRepo.Default))
