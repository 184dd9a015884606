import { Schema } from "effect"

/** A `count(*) AS n` row. */
export const Count = Schema.Struct({ n: Schema.Number })

/** What a survey's responses left in the database: row counts and the survey's `response_count`. */
export const StoredCounts = Schema.Struct({
  responses: Schema.Number,
  answers: Schema.Number,
  changes: Schema.Number,
  events: Schema.Number,
  responseCount: Schema.Number
})
