import { SqlClient } from "@effect/sql"
import { Array as Arr, Effect, Schema } from "effect"
import { EventEnvelope } from "../Domain/Event.js"
import {
  type ResponseId,
  responseId as brandResponseId,
  type SurveyId,
  surveyId as brandSurveyId,
  type WorkspaceId,
  workspaceId as brandWorkspaceId
} from "../Domain/Ids.js"
import { SqlDialect } from "../Sql/Dialect.js"
import { column, rowShape, type RowOf } from "../Sql/Rows.js"

const chunk = 500

/** A response about to be deleted, with what its `response.deleted` event and the clean-up need. */
const DoomedColumns = rowShape({
  id: column.map(column.text("r.id"), brandResponseId),
  surveyId: column.map(column.text("r.survey_id"), brandSurveyId),
  workspaceId: column.map(column.text("s.workspace_id"), brandWorkspaceId),
  externalUserId: column.nullableText("r.external_user_id")
})
export type Doomed = RowOf<typeof DoomedColumns.fields>

/** A stored event's payload: an event envelope as JSON text. */
const StoredPayload = Schema.parseJson(EventEnvelope)
const decodePayload = Schema.decodeUnknownSync(StoredPayload)
const encodePayload = Schema.encodeSync(StoredPayload)

/** A stored event that may carry a response, its payload decoded. */
const StoredEventColumns = rowShape({
  seq: column.num("seq"),
  payload: column.map(column.text("payload"), decodePayload)
})
export type StoredEvent = RowOf<typeof StoredEventColumns.fields>

const SurveyIds = rowShape({ id: column.map(column.text("id"), brandSurveyId) })
const EventSeq = rowShape({ seq: column.num("seq") })

/** Event types whose payload carries a response (older rows may lack `events.response_id`). */
const responseEventTypes = ["response.completed", "response.created", "response.updated"] as const

/**
 * The statements of deleting and erasing responses (ResponseDeletion runs them in one
 * transaction per response deleted, or per batch of an erasure): finding the doomed responses, their rows and what remembers them, the stored
 * events that carry them, the tokens and embed sessions of an erased person.
 */
export class ResponseDeletionRepo extends Effect.Service<ResponseDeletionRepo>()("Responses/ResponseDeletionRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const dialect = yield* SqlDialect

    /**
     * On PostgreSQL the doomed responses are locked as they are read, so that a save of one of them
     * in flight (which locks its response too) commits first and its events are among the payloads
     * reduced, or waits and then finds the response gone (404), instead of writing answers and
     * events for a response deleted meanwhile. SQLite's one writer already serialises the two.
     */
    const locked = dialect.lockRows("r")

    /** One response of a survey of the workspace, locked; none when there is no such response. */
    const doomedResponse = (input: {
      readonly workspaceId: WorkspaceId
      readonly surveyId: SurveyId
      readonly responseId: ResponseId
    }) =>
      Effect.map(
        sql`
        SELECT ${sql.literal(DoomedColumns.columns)} FROM responses r
        JOIN surveys s ON s.id = r.survey_id
        WHERE r.id = ${input.responseId} AND r.survey_id = ${input.surveyId} AND s.workspace_id = ${input.workspaceId}${locked}`
          .values,
        (rows) => rows.map(DoomedColumns.read)
      )

    /**
     * Up to `limit` responses of the workspace carrying the person's `externalUserId` (trashed
     * surveys included), locked.
     */
    const doomedOfPerson = (input: { readonly workspaceId: WorkspaceId; readonly externalUserId: string }, limit: number) =>
      Effect.map(
        sql`
        SELECT ${sql.literal(DoomedColumns.columns)} FROM responses r
        JOIN surveys s ON s.id = r.survey_id
        WHERE r.external_user_id = ${input.externalUserId} AND s.workspace_id = ${input.workspaceId}
        ORDER BY r.survey_id, r.created_at, r.id LIMIT ${limit}${locked}`.values,
        (rows) => rows.map(DoomedColumns.read)
      )

    /**
     * Deletes the person's respondent tokens (those made for the person and those of the person's
     * embed sessions), then the embed sessions themselves.
     */
    const deletePersonTokens = (input: { readonly workspaceId: WorkspaceId; readonly externalUserId: string }) =>
      Effect.gen(function*() {
        yield* sql`DELETE FROM respondent_tokens
          WHERE external_user_id = ${input.externalUserId}
            AND survey_id IN (SELECT id FROM surveys WHERE workspace_id = ${input.workspaceId})`
        yield* sql`DELETE FROM respondent_tokens WHERE embed_session_id IN (
          SELECT id FROM embed_sessions WHERE workspace_id = ${input.workspaceId} AND external_user_id = ${input.externalUserId})`
        yield* sql`DELETE FROM embed_sessions
          WHERE workspace_id = ${input.workspaceId} AND external_user_id = ${input.externalUserId}`
      })

    /** Lowers the survey's `responseCount` by `count`, never below 0. */
    const lowerResponseCount = (surveyId: SurveyId, count: number) =>
      sql`UPDATE surveys SET response_count = CASE WHEN response_count > ${count} THEN response_count - ${count} ELSE 0 END WHERE id = ${surveyId}`

    /**
     * Keeps the survey's high-water from going back when its latest responses go: the survey's
     * clock row takes the latest `updatedAt` of the doomed responses when that is later. On
     * PostgreSQL saves read the high-water from the responses and this row
     * (src/Responses/ChangeClockRepo.ts); on SQLite every save writes the row itself.
     */
    const raiseClock = dialect.choose({
      sqlite: () => (_surveyId: SurveyId, _ids: ReadonlyArray<ResponseId>) => Effect.void,
      pg: () => (surveyId: SurveyId, ids: ReadonlyArray<ResponseId>) =>
        Effect.forEach(Arr.chunksOf(ids, chunk), (part) =>
          sql`INSERT INTO response_clock AS c (survey_id, last_updated_at)
            SELECT ${surveyId}, MAX(updated_at) FROM responses WHERE survey_id = ${surveyId} AND id IN ${sql.in(part)}
            HAVING MAX(updated_at) IS NOT NULL
            ON CONFLICT (survey_id) DO UPDATE SET last_updated_at = GREATEST(c.last_updated_at, excluded.last_updated_at)`, {
          discard: true
        })
    })

    /** The stored events linked to one of the responses. */
    const linkedEvents = (ids: ReadonlyArray<ResponseId>) =>
      Effect.forEach(Arr.chunksOf(ids, chunk), (part) =>
        Effect.map(
          sql`SELECT ${sql.literal(StoredEventColumns.columns)} FROM events WHERE response_id IN ${sql.in(part)}`.values,
          (rows) => rows.map(StoredEventColumns.read)
        )).pipe(Effect.map(Arr.flatten))

    /**
     * The `seq` of the first stored event linked to its response; null when none is. Every
     * response event stored since events were linked is linked, so those that are not all come
     * before it (and are gone 30 days after the upgrade that linked them, with their retention).
     */
    const firstLinkedSeq = Effect.map(
      sql`SELECT ${sql.literal(EventSeq.columns)} FROM events WHERE response_id IS NOT NULL ORDER BY seq LIMIT 1`.values,
      (rows) => rows[0] === undefined ? null : EventSeq.at.seq(rows[0])
    )

    /**
     * The survey's stored response events not linked to their response, stored before events
     * were, among those before `before` (all of them when null): a range of the survey's events by
     * `seq` that the upgrade's retention empties.
     */
    const unlinkedEvents = (surveyId: SurveyId, before: number | null) =>
      (before === null
        ? sql`SELECT ${sql.literal(StoredEventColumns.columns)} FROM events
            WHERE survey_id = ${surveyId} AND response_id IS NULL AND type IN ${sql.in(responseEventTypes)}`
        : sql`SELECT ${sql.literal(StoredEventColumns.columns)} FROM events
            WHERE survey_id = ${surveyId} AND seq < ${before} AND response_id IS NULL AND type IN ${
          sql.in(responseEventTypes)
        }`).values.pipe(Effect.map((rows) => rows.map(StoredEventColumns.read)))

    /** Replaces a stored event's payload. */
    const replacePayload = (seq: number, payload: EventEnvelope) =>
      sql`UPDATE events SET payload = ${encodePayload(payload)} WHERE seq = ${seq}`

    /**
     * Deletes the responses with their answers, their respondents' links to them, and the first
     * answers of the respondent API remembered for idempotent retries (each names the response it
     * created; its scope is the respondent token's, scopeText of a "Respondent" scope).
     */
    const deleteResponses = (ids: ReadonlyArray<ResponseId>) =>
      Effect.gen(function*() {
        for (const id of ids) {
          yield* sql`DELETE FROM idempotency_keys WHERE body = ${JSON.stringify({ responseId: id })} AND scope IN (
            SELECT 'respondent:' || token_hash FROM respondent_responses WHERE response_id = ${id})`
        }
        for (const part of Arr.chunksOf(ids, chunk)) {
          yield* sql`DELETE FROM respondent_responses WHERE response_id IN ${sql.in(part)}`
          yield* sql`DELETE FROM answers WHERE response_id IN ${sql.in(part)}`
          yield* sql`DELETE FROM responses WHERE id IN ${sql.in(part)}`
        }
      })

    /** The ids of the workspace's surveys, trashed ones included. */
    const surveysOf = (workspaceId: WorkspaceId) =>
      Effect.map(
        sql`SELECT ${sql.literal(SurveyIds.columns)} FROM surveys WHERE workspace_id = ${workspaceId}`.values,
        (rows) => rows.map(SurveyIds.at.id)
      )

    /** Deletes the remembered answers of the scope's requests with these hashes. */
    const deleteRemembered = (scope: string, requestHashes: ReadonlyArray<string>) =>
      Effect.forEach(Arr.chunksOf(requestHashes, chunk), (part) =>
        sql`DELETE FROM idempotency_keys WHERE scope = ${scope} AND request_hash IN ${sql.in(part)}`, { discard: true })

    return {
      doomedResponse,
      doomedOfPerson,
      deletePersonTokens,
      lowerResponseCount,
      raiseClock,
      linkedEvents,
      firstLinkedSeq,
      unlinkedEvents,
      replacePayload,
      deleteResponses,
      surveysOf,
      deleteRemembered
    } as const
  })
}) {}
