import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { migrateUpTo, withBareDatabase } from "./support/Migrations.js"
import { decodeAs } from "./support/TestServer.js"

const Questions = Schema.Array(Schema.Struct({
  id: Schema.String,
  survey_id: Schema.String,
  type: Schema.String,
  label: Schema.String,
  position: Schema.Number,
  options: Schema.String,
  deleted: Schema.Number
}))
const Layouts = Schema.Array(Schema.Struct({ id: Schema.String, answer_layout: Schema.Number }))

/** Questions stored before 0019, migrated, then written as authoring writes them. */
const scenario = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* migrateUpTo("0016_~")
  yield* sql`INSERT INTO accounts (id, plan_id) VALUES ('acc', 'pro')`
  yield* sql`INSERT INTO workspaces (id, owner_account_id) VALUES ('ws', 'acc')`
  yield* sql`INSERT INTO surveys (id, workspace_id, title, status, created_at, updated_at) VALUES
    ('srv_a', 'ws', 'A', 'published', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z'),
    ('srv_b', 'ws', 'B', 'draft', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')`
  yield* sql`INSERT INTO questions (id, survey_id, type, label, position, options, deleted) VALUES
    ('q_one', 'srv_a', 'checkbox', 'One', 1, '[{"value":"x","label":"X"}]', 0),
    ('q_two', 'srv_a', 'textarea', 'Two', 2, '[]', 1)`
  const before = decodeAs(Layouts, yield* sql`SELECT id, answer_layout FROM surveys ORDER BY id`)

  yield* migrateUpTo("9999")
  const kept = decodeAs(
    Questions,
    yield* sql`SELECT id, survey_id, type, label, position, options, deleted FROM questions ORDER BY survey_id, id`
  )
  expect(kept).toEqual([
    { id: "q_one", survey_id: "srv_a", type: "checkbox", label: "One", position: 1, options: "[{\"value\":\"x\",\"label\":\"X\"}]", deleted: 0 },
    { id: "q_two", survey_id: "srv_a", type: "textarea", label: "Two", position: 2, options: "[]", deleted: 1 }
  ])

  // Another survey may now use the same id; one survey still may not have it twice.
  yield* sql`INSERT INTO questions (id, survey_id, type, label, position) VALUES ('q_one', 'srv_b', 'email', 'Mail', 1)`
  const twice = yield* Effect.either(
    sql`INSERT INTO questions (id, survey_id, type, label, position) VALUES ('q_one', 'srv_a', 'email', 'Again', 3)`
  )
  expect(twice._tag).toBe("Left")

  // The layout triggers of 0009 still move a survey's answer_layout on a new or moved question.
  yield* sql`UPDATE questions SET position = 5 WHERE survey_id = 'srv_a' AND id = 'q_one'`
  const after = decodeAs(Layouts, yield* sql`SELECT id, answer_layout FROM surveys ORDER BY id`)
  expect(after.map((s) => s.answer_layout - (before.find((b) => b.id === s.id)?.answer_layout ?? 0))).toEqual([1, 1])
})

describe("migration 0019", () => {
  it.scoped("keys questions by survey and id, keeping every question and the layout triggers", () =>
    withBareDatabase("survey-0019-", scenario).pipe(Effect.orDie))
})
