import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { randomBytes } from "node:crypto"

/**
 * The key that signs the respondent tokens of survey pages (`/s/{surveyId}`), made once per
 * database so that every process on it checks the tokens of the others. Those tokens are not
 * stored: a page load writes nothing. Never logged or answered.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE service_secrets (
    name TEXT PRIMARY KEY,
    secret TEXT NOT NULL
  )`
  yield* sql`INSERT INTO service_secrets (name, secret) VALUES ('respondent-token', ${randomBytes(32).toString("base64url")})`
})
