import { SqlClient } from "@effect/sql"
import { Array as Arr, Clock, Effect, ParseResult, Schema } from "effect"
import { hashToken } from "../Auth/Token.js"
import { storedValue } from "../Domain/AnswerValue.js"
import { StoredQuestionType } from "../Domain/Question.js"
import { toIso } from "../Domain/Time.js"
import { refreshAnswerDocuments } from "../Responses/AnswerDocumentRepo.js"
import { Fixture, type FixtureInput } from "./Fixture.js"

export interface ImportSummary {
  readonly plans: number
  readonly accounts: number
  readonly workspaces: number
  readonly members: number
  readonly apiKeys: number
  readonly surveys: number
  readonly questions: number
  readonly responses: number
  readonly answers: number
}

const batch = 400

const bool = (b: boolean) => (b ? 1 : 0)

export class FixtureInvalid extends Schema.TaggedError<FixtureInvalid>()("FixtureInvalid", {
  message: Schema.String
}) {}

/** Decodes a fixture; the error lists every problem as `path: message`, one per line. */
export const decodeFixture = (input: unknown) =>
  Schema.decodeUnknown(Fixture, { errors: "all", onExcessProperty: "error" })(input).pipe(
    Effect.catchTag("ParseError", (error) =>
      Effect.flatMap(ParseResult.ArrayFormatter.formatError(error), (issues) =>
        new FixtureInvalid({
          message: "the fixture is not valid:\n" + Arr.dedupeWith(
            issues.map((i) => `  ${i.path.join(".") || "(root)"}: ${i.message}`),
            (a, b) => a === b
          ).slice(0, 50).join("\n")
        })))
  )

/**
 * Loads a fixture in one transaction, idempotent by id: rows that exist are replaced,
 * a response's answers are replaced as a whole. Importing responses emits no events.
 */
export const importFixture = Effect.fn("Fixtures.import")(function*(fixture: Fixture) {
  const sql = yield* SqlClient.SqlClient
  const now = toIso(yield* Clock.currentTimeMillis)

  const run = Effect.gen(function*() {
    for (const p of fixture.plans) {
      yield* sql`INSERT INTO plans ${sql.insert(p)}
        ON CONFLICT (id) DO UPDATE SET api_access = excluded.api_access, burst_limit = excluded.burst_limit,
          burst_window_minutes = excluded.burst_window_minutes, daily_limit = excluded.daily_limit,
          monthly_limit = excluded.monthly_limit`
    }
    for (const a of fixture.accounts) {
      yield* sql`INSERT INTO accounts ${sql.insert(a)} ON CONFLICT (id) DO UPDATE SET plan_id = excluded.plan_id`
    }
    for (const w of fixture.workspaces) {
      yield* sql`INSERT INTO workspaces ${sql.insert(w)}
        ON CONFLICT (id) DO UPDATE SET owner_account_id = excluded.owner_account_id`
    }
    for (const m of fixture.members) {
      yield* sql`INSERT INTO members ${sql.insert(m)}
        ON CONFLICT (workspace_id, account_id) DO UPDATE SET role = excluded.role`
    }
    for (const k of fixture.apiKeys) {
      const tokenHash = hashToken(k.token)
      yield* sql`INSERT INTO api_keys ${
        sql.insert({
          id: `key_${tokenHash.slice(0, 20)}`,
          tokenHash,
          workspaceId: k.workspaceId,
          createdBy: k.createdBy,
          surveyIds: k.surveyIds === null ? null : JSON.stringify(k.surveyIds),
          revoked: bool(k.revoked),
          createdAt: now
        })
      } ON CONFLICT (token_hash) DO UPDATE SET workspace_id = excluded.workspace_id,
          created_by = excluded.created_by, survey_ids = excluded.survey_ids, revoked = excluded.revoked`
    }

    let questions = 0
    const types = new Map<string, Map<string, StoredQuestionType>>()
    for (const s of fixture.surveys) {
      yield* sql`INSERT INTO surveys ${
        sql.insert({
          id: s.id,
          workspaceId: s.workspaceId,
          title: s.title,
          description: s.description,
          status: s.status,
          trashed: bool(s.trashed),
          createdAt: s.createdAt,
          updatedAt: s.updatedAt
        })
      } ON CONFLICT (id) DO UPDATE SET workspace_id = excluded.workspace_id, title = excluded.title,
          description = excluded.description, status = excluded.status, trashed = excluded.trashed,
          created_at = excluded.created_at, updated_at = excluded.updated_at`
      const surveyTypes = new Map<string, StoredQuestionType>()
      types.set(s.id, surveyTypes)
      for (const q of s.questions) {
        surveyTypes.set(q.id, q.type)
        questions++
        yield* sql`INSERT INTO questions ${
          sql.insert({
            id: q.id,
            surveyId: s.id,
            type: q.type,
            label: q.label,
            required: bool(q.required),
            allowMultiple: bool(q.allowMultiple),
            position: q.order,
            options: JSON.stringify(q.options),
            settings: JSON.stringify(q.settings),
            deleted: bool(q.deleted)
          })
        } ON CONFLICT (id) DO UPDATE SET survey_id = excluded.survey_id, type = excluded.type,
            label = excluded.label, required = excluded.required, allow_multiple = excluded.allow_multiple,
            position = excluded.position, options = excluded.options, settings = excluded.settings,
            deleted = excluded.deleted`
      }
    }

    // Question types of surveys that the fixture answers but does not define.
    const missing = Arr.dedupe(fixture.responses.map((r) => r.surveyId)).filter((id) => !types.has(id))
    for (const ids of Arr.chunksOf(missing, batch)) {
      const rows = yield* sql`SELECT id, survey_id, type FROM questions WHERE survey_id IN ${sql.in(ids)}`.pipe(
        Effect.flatMap(Schema.decodeUnknown(Schema.Array(Schema.Struct({
          id: Schema.String,
          surveyId: Schema.String,
          type: StoredQuestionType
        }))))
      )
      for (const row of rows) {
        const map = types.get(row.surveyId) ?? new Map<string, StoredQuestionType>()
        map.set(row.id, row.type)
        types.set(row.surveyId, map)
      }
    }

    let answers = 0
    for (const chunk of Arr.chunksOf(fixture.responses, batch)) {
      yield* sql`INSERT INTO responses ${
        sql.insert(chunk.map((r) => ({
          id: r.id,
          surveyId: r.surveyId,
          externalUserId: r.externalUserId,
          completed: bool(r.completedAt !== null),
          completedAt: r.completedAt,
          createdAt: r.createdAt,
          updatedAt: r.completedAt ?? r.createdAt
        })))
      } ON CONFLICT (id) DO UPDATE SET survey_id = excluded.survey_id, external_user_id = excluded.external_user_id,
          completed = excluded.completed, completed_at = excluded.completed_at, created_at = excluded.created_at,
          updated_at = excluded.updated_at`
      yield* sql`DELETE FROM answers WHERE response_id IN ${sql.in(chunk.map((r) => r.id))}`
      yield* sql`INSERT INTO response_changes ${
        sql.insert(chunk.map((r) => ({ responseId: r.id, surveyId: r.surveyId, changedAt: now })))
      }`
      const rows = chunk.flatMap((r) =>
        r.answers.filter((a) => a.values.length > 0).map((a) => ({
          responseId: r.id,
          questionId: a.questionId,
          value: storedValue(types.get(r.surveyId)?.get(a.questionId) ?? null, a.values),
          values: JSON.stringify(a.values)
        }))
      )
      for (const part of Arr.chunksOf(rows, batch)) {
        answers += part.length
        yield* sql`INSERT INTO answers ${sql.insert(part)}
          ON CONFLICT (response_id, question_id) DO UPDATE SET value = excluded.value, "values" = excluded."values"`
      }
      yield* refreshAnswerDocuments(sql, chunk.map((r) => r.id))
    }

    const touched = Arr.dedupe([...fixture.surveys.map((s) => s.id), ...fixture.responses.map((r) => r.surveyId)])
    for (const ids of Arr.chunksOf(touched, batch)) {
      yield* sql`UPDATE surveys SET
          question_count = (SELECT COUNT(*) FROM questions q
                            WHERE q.survey_id = surveys.id AND q.deleted = 0 AND q.type <> 'section'),
          response_count = (SELECT COUNT(*) FROM responses r WHERE r.survey_id = surveys.id)
        WHERE id IN ${sql.in(ids)}`
    }

    return {
      plans: fixture.plans.length,
      accounts: fixture.accounts.length,
      workspaces: fixture.workspaces.length,
      members: fixture.members.length,
      apiKeys: fixture.apiKeys.length,
      surveys: fixture.surveys.length,
      questions,
      responses: fixture.responses.length,
      answers
    } satisfies ImportSummary
  })

  return yield* sql.withTransaction(run).pipe(
    Effect.catchTag("SqlError", (error) =>
      new FixtureInvalid({
        message: `the fixture could not be stored (nothing was imported): ${
          error.cause instanceof Error ? error.cause.message : error.message
        }`
      }))
  )
})

export const importFixtureInput = (input: FixtureInput | unknown) =>
  Effect.flatMap(decodeFixture(input), importFixture)
