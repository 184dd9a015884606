import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { ddlOf } from "../Ddl.js"

/**
 * Indexes that keep each background round's cost to what is due rather than what is kept. The
 * delivery claim takes each webhook's first due deliveries in `(next_attempt_at, id)` order: with
 * `id` in the index the walk stops after those, where the index of 0004 without it read every due
 * delivery of the webhook to sort them (on PostgreSQL; SQLite's index entries end in the row id
 * anyway). It replaces that index. Built in the migrations' transaction: only pending deliveries
 * are indexed, so the build reads the table once and writes a few entries.
 */
export default Effect.gen(function*() {
  const ddl = ddlOf(yield* SqlClient.SqlClient)
  yield* ddl`CREATE INDEX deliveries_claim ON deliveries (webhook_id, next_attempt_at, id) WHERE state = 'pending'`
  yield* ddl`DROP INDEX deliveries_by_webhook`
})
