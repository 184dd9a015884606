import { SqlClient } from "@effect/sql"
import { Array as Arr, Effect, Schema } from "effect"
import { AggregateRepo } from "../Analytics/AggregateRepo.js"
import { apply, emptyAggregates } from "../Analytics/Compute.js"
import { ResponseId, type SurveyId, type WorkspaceId } from "../Domain/Ids.js"
import { EventEnvelope } from "../Domain/Event.js"
import { Outbox } from "../Events/OutboxRepo.js"
import { requestHash, scopeText } from "../Http/Idempotency.js"

const chunk = 500

/** A response about to be deleted, with what its `response.deleted` event and the clean-up need. */
const Doomed = Schema.Struct({
  id: ResponseId,
  surveyId: Schema.String,
  workspaceId: Schema.String,
  externalUserId: Schema.NullOr(Schema.String)
})
type Doomed = typeof Doomed.Type
const decodeDoomed = Schema.decodeUnknown(Schema.Array(Doomed))

const StoredEvent = Schema.Struct({ seq: Schema.Number, payload: Schema.parseJson(EventEnvelope) })
const decodeStoredEvents = Schema.decodeUnknown(Schema.Array(StoredEvent))
const encodePayload = Schema.encodeSync(Schema.parseJson(EventEnvelope))

/** Event types whose payload carries a response (older rows may lack `events.response_id`). */
const responseEventTypes = ["response.completed", "response.created", "response.updated"] as const

/**
 * Deletes responses (v1-extensions §X2.3): the response and its answers, what it contributes to
 * the stored aggregates (subtracted, not recomputed), the survey's `responseCount`, every stored
 * event payload that carries it (reduced to `{responseId, externalUserId: null, response: null}`,
 * so neither a redelivery nor a pending retry sends it again), the answers remembered for
 * idempotent retries of its respondent; and one `response.deleted` event each. Callers run it
 * inside one transaction.
 */
export class ResponseDeletion extends Effect.Service<ResponseDeletion>()("Responses/ResponseDeletion", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const aggregates = yield* AggregateRepo
    const outbox = yield* Outbox

    /**
     * On PostgreSQL the doomed responses are locked as they are read, so that a save of one of them
     * in flight (which locks its response too, src/Respondents/ResponseWriter.ts) commits first and
     * its events are among the payloads reduced, or waits and then finds the response gone (404),
     * instead of writing answers and events for a response deleted meanwhile. SQLite's one writer
     * already serialises the two. After these rows the deletion takes the surveys' counts and only
     * then writes to the outbox, whose readers wait for open writers (src/Sql/Dialect.ts).
     */
    const lockedRows = sql.onDialectOrElse({ pg: () => sql` FOR UPDATE OF r`, orElse: () => sql`` })

    /** Subtracts what the responses contributed to their surveys' stored counters. */
    const subtractContributions = (ids: ReadonlyArray<ResponseId>) =>
      Effect.gen(function*() {
        const former = yield* aggregates.contributionsOf(ids)
        for (const rows of Object.values(Arr.groupBy(former, (f) => f.surveyId))) {
          const surveyId = rows[0].surveyId
          const signature = yield* aggregates.storedSignature(surveyId)
          if (signature === null) continue
          const delta = emptyAggregates()
          for (const row of rows) apply(delta, row.contribution, -1)
          yield* aggregates.addDelta(surveyId, delta, signature)
        }
        yield* aggregates.deleteContributions(ids)
      })

    /** Rewrites every stored payload that carries one of the responses. */
    const reducePayloads = (doomed: ReadonlyArray<Doomed>) =>
      Effect.gen(function*() {
        const ids = doomed.map((d) => d.id)
        const linked = yield* Effect.forEach(Arr.chunksOf(ids, chunk), (part) =>
          sql`SELECT seq, payload FROM events WHERE response_id IN ${sql.in(part)}`.pipe(
            Effect.flatMap(decodeStoredEvents)
          )).pipe(Effect.map(Arr.flatten))
        // Events stored before they were linked to their response name it only in the payload.
        const unlinked = yield* Effect.forEach(Arr.dedupe(doomed.map((d) => d.surveyId)), (surveyId) =>
          sql`SELECT seq, payload FROM events
              WHERE survey_id = ${surveyId} AND response_id IS NULL AND type IN ${sql.in(responseEventTypes)}`.pipe(
            Effect.flatMap(decodeStoredEvents)
          )).pipe(Effect.map(Arr.flatten))
        const wanted = new Set<string>(ids)
        for (const event of [...linked, ...unlinked]) {
          const responseId = event.payload.data["responseId"]
          if (typeof responseId !== "string" || !wanted.has(responseId)) continue
          const reduced = encodePayload({
            ...event.payload,
            data: { responseId, externalUserId: null, response: null }
          })
          yield* sql`UPDATE events SET payload = ${reduced} WHERE seq = ${event.seq}`
        }
      })

    const remove = (doomed: ReadonlyArray<Doomed>) =>
      Effect.gen(function*() {
        if (doomed.length === 0) return
        const ids = doomed.map((d) => d.id)
        yield* subtractContributions(ids)
        // Row locks before the outbox: the counts first, then the payloads (see `lockedRows`).
        for (const [surveyId, rows] of Object.entries(Arr.groupBy(doomed, (d) => d.surveyId))) {
          yield* sql`UPDATE surveys SET response_count = CASE WHEN response_count > ${rows.length} THEN response_count - ${rows.length} ELSE 0 END WHERE id = ${surveyId}`
        }
        yield* reducePayloads(doomed)
        // A remembered first answer of the respondent API names the response it created; its scope
        // is the respondent token's (scopeText of a "Respondent" scope).
        for (const id of ids) {
          yield* sql`DELETE FROM idempotency_keys WHERE body = ${JSON.stringify({ responseId: id })} AND scope IN (
            SELECT 'respondent:' || token_hash FROM respondent_responses WHERE response_id = ${id})`
        }
        for (const part of Arr.chunksOf(ids, chunk)) {
          yield* sql`DELETE FROM respondent_responses WHERE response_id IN ${sql.in(part)}`
          yield* sql`DELETE FROM answers WHERE response_id IN ${sql.in(part)}`
          yield* sql`DELETE FROM responses WHERE id IN ${sql.in(part)}`
        }
        for (const d of doomed) {
          yield* outbox.append({
            type: "response.deleted",
            workspaceId: d.workspaceId,
            surveyId: d.surveyId,
            responseId: d.id,
            data: { responseId: d.id, externalUserId: d.externalUserId }
          })
        }
      })

    /** Deletes one response of a survey of the workspace; answers whether it existed. */
    const deleteOne = Effect.fn("ResponseDeletion.deleteOne")(function*(input: {
      readonly workspaceId: WorkspaceId
      readonly surveyId: SurveyId
      readonly responseId: ResponseId
    }) {
      const doomed = yield* sql`
        SELECT r.id, r.survey_id, s.workspace_id, r.external_user_id FROM responses r
        JOIN surveys s ON s.id = r.survey_id
        WHERE r.id = ${input.responseId} AND r.survey_id = ${input.surveyId} AND s.workspace_id = ${input.workspaceId}${lockedRows}`
        .pipe(Effect.flatMap(decodeDoomed))
      yield* remove(doomed)
      return doomed.length > 0
    }, (effect) => Effect.orDie(sql.withTransaction(effect)))

    /**
     * Erases one person of a workspace: every response carrying the `externalUserId` (trashed
     * surveys included), and the embed sessions and respondent tokens made for them, so that no
     * later response can carry the id. The id stays only in the `response.deleted` events written
     * here (their `data`, as X2.3 requires, for the receivers to learn whose responses went), which
     * are kept 30 days for redelivery like every event. Answers how many responses went.
     */
    const erase = Effect.fn("ResponseDeletion.erase")(function*(input: {
      readonly workspaceId: string
      readonly externalUserId: string
    }) {
      // The person's tokens go first: a save reads its token again inside its transaction (held
      // FOR SHARE until it commits on PostgreSQL; on SQLite writers take turns, see ResponseWriter),
      // so this waits for saves in flight and the responses they stored are among those read next;
      // a save that comes later finds its token gone.
      yield* sql`DELETE FROM respondent_tokens
        WHERE external_user_id = ${input.externalUserId}
          AND survey_id IN (SELECT id FROM surveys WHERE workspace_id = ${input.workspaceId})`
      yield* sql`DELETE FROM respondent_tokens WHERE embed_session_id IN (
        SELECT id FROM embed_sessions WHERE workspace_id = ${input.workspaceId} AND external_user_id = ${input.externalUserId})`
      yield* sql`DELETE FROM embed_sessions
        WHERE workspace_id = ${input.workspaceId} AND external_user_id = ${input.externalUserId}`
      const doomed = yield* sql`
        SELECT r.id, r.survey_id, s.workspace_id, r.external_user_id FROM responses r
        JOIN surveys s ON s.id = r.survey_id
        WHERE r.external_user_id = ${input.externalUserId} AND s.workspace_id = ${input.workspaceId}
        ORDER BY r.survey_id, r.created_at, r.id${lockedRows}`.pipe(Effect.flatMap(decodeDoomed))
      yield* remove(doomed)
      // Remembered answers of embed session requests for the person (sealed, but holding its one-time URL).
      const surveys = yield* sql`SELECT id FROM surveys WHERE workspace_id = ${input.workspaceId}`.pipe(
        Effect.flatMap(Schema.decodeUnknown(Schema.Array(Schema.Struct({ id: Schema.String }))))
      )
      const hashes = surveys.map((s) =>
        requestHash("POST", `/surveys/${s.id}/embed-sessions`, { externalUserId: input.externalUserId })
      )
      for (const part of Arr.chunksOf(hashes, chunk)) {
        yield* sql`DELETE FROM idempotency_keys
          WHERE scope = ${scopeText({ _tag: "Workspace", workspaceId: input.workspaceId })} AND request_hash IN ${sql.in(part)}`
      }
      return doomed.length
    }, (effect) => Effect.orDie(sql.withTransaction(effect)))

    return { deleteOne, erase } as const
  })
}) {}
