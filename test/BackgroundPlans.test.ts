import { SqlClient, Statement } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { Aggregator } from "../src/Analytics/Aggregator.js"
import { AggregateRepo } from "../src/Analytics/AggregateRepo.js"
import { JobLeases } from "../src/Background/JobLeases.js"
import { toIso } from "../src/Domain/Time.js"
import { Idempotency } from "../src/Http/Idempotency.js"
import { RespondentPurge } from "../src/Respondents/RespondentPurge.js"
import { Deliveries } from "../src/Webhooks/Deliveries.js"
import { DeliveryRepo } from "../src/Webhooks/DeliveryRepo.js"
import { purgeOnce } from "../src/Webhooks/Purge.js"
import { decodeAs, TestDatabase, testDatabase } from "./support/TestServer.js"

/**
 * Every statement a background loop runs on each round must be planned against an index on a
 * database with a long history and no statistics (a table that was never analyzed, or analyzed
 * when it was small): no sequential scan of a table that grows with the history, and no subquery
 * run once per row. Each round's statements are recorded as the service runs them on a small
 * database; the history is loaded afterwards, and each statement is explained over it.
 */
const grown = ["deliveries", "events", "delivery_attempts", "respondent_tokens", "embed_sessions", "idempotency_keys", "response_changes"]

const DAY = 86_400_000
const DELIVERED = 200_000
const PENDING = 5_000
const WEBHOOKS = 40

type Recorded = ReadonlyArray<readonly [text: string, params: ReadonlyArray<unknown>]>

class Rounds extends Context.Tag("test/Rounds")<Rounds, ReadonlyMap<string, Recorded>>() {}

/** The statements `round` runs, as compiled for the database; locks and transaction control left out. */
const record = <A, E, R>(round: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const seen: Array<readonly [string, ReadonlyArray<unknown>]> = []
    yield* round.pipe(Statement.withTransformer((statement) => {
      const [text, params] = statement.compile()
      if (/^\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b/i.test(text)) seen.push([text, params])
      return Effect.succeed(statement)
    }))
    return seen
  })

/** A little of everything each round acts on: a webhook with new events, expired rows, a response change. */
const seed = (now: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const old = now - 40 * DAY
    yield* sql`INSERT INTO accounts (id, plan_id) VALUES ('acc', 'business')`
    yield* sql`INSERT INTO workspaces (id, owner_account_id) VALUES ('ws', 'acc')`
    yield* sql`INSERT INTO surveys (id, workspace_id, title, status, created_at, updated_at)
      VALUES ('srv', 'ws', 'Survey', 'published', ${toIso(old)}, ${toIso(old)})`
    yield* sql`INSERT INTO webhooks (id, workspace_id, survey_id, target_url, secret, since_seq, created_at, updated_at)
      VALUES ('wh', 'ws', NULL, 'http://127.0.0.1:9/hook', 'whsec', 0, ${toIso(old)}, ${toIso(old)})`
    yield* sql`INSERT INTO webhook_event_types (webhook_id, event_type) VALUES ('wh', 'response.completed')`
    // One old event, delivered long ago and fanned out; three new ones for the fan-out and the claim.
    yield* sql`INSERT INTO events (id, type, workspace_id, survey_id, payload, created_at)
      VALUES ('evt_old', 'response.completed', 'ws', 'srv', '{}', ${toIso(old)})`
    yield* sql`INSERT INTO deliveries (event_seq, event_id, webhook_id, state, attempts, next_attempt_at, lease_until, created_at)
      SELECT seq, id, 'wh', 'delivered', 1, ${old}, 0, ${old} FROM events`
    yield* sql`UPDATE outbox_cursors SET last_seq = (SELECT MAX(seq) FROM events) WHERE name = 'webhooks'`
    for (const id of ["evt_1", "evt_2", "evt_3"]) {
      yield* sql`INSERT INTO events (id, type, workspace_id, survey_id, payload, created_at)
        VALUES (${id}, 'response.completed', 'ws', 'srv', '{}', ${toIso(now)})`
    }
    yield* sql`INSERT INTO delivery_attempts (id, delivery_id, scope, workspace_id, survey_id, event_id, event_type, ok, response_status, error, attempted_at)
      VALUES ('att_old', 1, 'workspace', 'ws', NULL, 'evt_old', 'response.completed', 1, 200, NULL, ${old})`
    yield* sql`INSERT INTO respondent_tokens (token_hash, survey_id, embed_session_id, external_user_id, single_response, created_at, expires_at)
      VALUES ('expired', 'srv', NULL, NULL, 0, ${toIso(old)}, ${toIso(old + DAY)})`
    yield* sql`INSERT INTO idempotency_keys (scope, idempotency_key, request_hash, status, body, created_at)
      VALUES ('ws', 'old', 'h', 201, '{}', ${old})`
    yield* sql`INSERT INTO responses (id, survey_id, completed, created_at, updated_at)
      VALUES ('res', 'srv', 1, ${toIso(now)}, ${toIso(now)})`
    yield* sql`INSERT INTO response_changes (response_id, survey_id, changed_at) VALUES ('res', 'srv', ${toIso(now)})`
  })

/**
 * Thirty days of a busy workspace, written in a few statements: 40 webhooks, 200,000 delivered
 * deliveries and 5,000 pending ones with their events and attempts, live and expired respondent
 * tokens and embed sessions, a day of idempotency answers and a backlog of response changes.
 * Autovacuum is kept off these tables, so that nothing analyzes them meanwhile.
 */
const loadHistory = (now: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    for (const table of grown) yield* sql.unsafe(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`)
    const start = now - 30 * DAY
    const total = DELIVERED + PENDING
    yield* sql`INSERT INTO surveys (id, workspace_id, title, status, created_at, updated_at)
      SELECT 'srv_' || i, 'ws', 'Survey', 'published', ${toIso(start)}, ${toIso(start)} FROM generate_series(1, ${WEBHOOKS}) i`
    yield* sql`INSERT INTO webhooks (id, workspace_id, survey_id, target_url, secret, since_seq, created_at, updated_at)
      SELECT 'wh_' || i, 'ws', 'srv_' || i, 'http://127.0.0.1:9/hook', 'whsec', 0, ${toIso(start)}, ${toIso(start)}
      FROM generate_series(1, ${WEBHOOKS}) i`
    yield* sql`INSERT INTO webhook_event_types (webhook_id, event_type) SELECT id, 'response.completed' FROM webhooks
      ON CONFLICT DO NOTHING`
    const base = yield* sql`SELECT MAX(seq) AS seq FROM events`.values
    const after = Number(base[0]?.[0] ?? 0)
    yield* sql`INSERT INTO events (id, type, workspace_id, survey_id, payload, created_at)
      SELECT 'evt_h' || i, 'response.completed', 'ws', 'srv_' || (i % ${WEBHOOKS} + 1), '{"data":{}}',
        to_char(to_timestamp((${start}::bigint + i * ${Math.floor((30 * DAY) / total)}::bigint) / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
      FROM generate_series(1, ${total}) i`
    yield* sql`INSERT INTO deliveries (event_seq, event_id, webhook_id, state, attempts, next_attempt_at, lease_until, created_at)
      SELECT e.seq, e.id, 'wh_' || ((e.seq - ${after}) % ${WEBHOOKS} + 1),
        CASE WHEN e.seq - ${after} > ${DELIVERED} THEN 'pending' ELSE 'delivered' END,
        1, ${start}::bigint + (e.seq - ${after}) * 12, 0, ${start}::bigint + (e.seq - ${after}) * 12
      FROM events e WHERE e.seq > ${after}`
    yield* sql`INSERT INTO delivery_attempts (id, delivery_id, scope, workspace_id, survey_id, event_id, event_type, ok, response_status, error, attempted_at)
      SELECT 'att_h' || d.id, d.id, 'survey', 'ws', 'srv_1', d.event_id, 'response.completed', 1, 200, NULL, d.next_attempt_at
      FROM deliveries d WHERE d.state = 'delivered'`
    yield* sql`UPDATE outbox_cursors SET last_seq = ${after + total} WHERE name = 'webhooks'`
    yield* sql`INSERT INTO embed_sessions (id, token_hash, survey_id, workspace_id, external_user_id, created_at, expires_at)
      SELECT 'emb_' || i, 'emb_hash_' || i, 'srv_1', 'ws', 'user_' || i, ${toIso(start)}, ${toIso(now + DAY)}
      FROM generate_series(1, 50000) i`
    yield* sql`INSERT INTO respondent_tokens (token_hash, survey_id, embed_session_id, external_user_id, single_response, created_at, expires_at)
      SELECT 'tok_' || i, 'srv_1', CASE WHEN i % 4 = 0 THEN 'emb_' || (i / 4) END, NULL, 0, ${toIso(start)}, ${toIso(now + DAY)}
      FROM generate_series(1, 200000) i`
    yield* sql`INSERT INTO idempotency_keys (scope, idempotency_key, request_hash, status, body, created_at)
      SELECT 'ws', 'key_' || i, 'h', 201, '{}', ${now}::bigint - i FROM generate_series(1, 100000) i`
    yield* sql`INSERT INTO response_changes (response_id, survey_id, changed_at)
      SELECT 'res_' || i, 'srv_1', ${toIso(now)} FROM generate_series(1, 50000) i`
  })

const RoundsLive = Layer.effect(
  Rounds,
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    yield* seed(now)
    const deliveries = yield* DeliveryRepo
    const worker = yield* Deliveries
    const jobs = yield* JobLeases
    const aggregates = yield* AggregateRepo
    const rounds = new Map<string, Recorded>()
    const round = <A, E, R>(name: string, effect: Effect.Effect<A, E, R>) =>
      Effect.map(record(effect), (seen) => void rounds.set(name, seen))
    yield* round("outbox fan-out", worker.fanOut(now, 1000))
    yield* round("delivery claim", worker.claim({ now, free: 64, perWebhook: 16, inFlight: new Map(), leaseMillis: 30_000 }))
    yield* round("delivery lease renewal", deliveries.renew([1, 2, 3], now + 30_000))
    yield* round("delivery worker's outlook", deliveries.outlook(now))
    yield* round("outbox depth", deliveries.depth)
    yield* round("attempt and event purge", purgeOnce)
    yield* round("respondent token purge", (yield* RespondentPurge).run())
    yield* round("idempotency purge", (yield* Idempotency).prune())
    yield* round("job leases", Effect.zip(jobs.claimPeriod("plans", 3_600_000), jobs.hold("plans-held")))
    yield* round(
      "aggregator's reads of changes",
      Effect.zip(Effect.zip(aggregates.latestChange, aggregates.position), (yield* Aggregator).step())
    )
    yield* round("aggregator's poll of its lag", aggregates.lag)
    if (testDatabase === "postgres") yield* loadHistory(now)
    return rounds
  })
)

const PlanNode: Schema.Schema<PlanNode> = Schema.Struct({
  "Node Type": Schema.String,
  "Relation Name": Schema.optional(Schema.String),
  "Parent Relationship": Schema.optional(Schema.String),
  Plans: Schema.optional(Schema.Array(Schema.suspend(() => PlanNode)))
})
interface PlanNode {
  readonly "Node Type": string
  readonly "Relation Name"?: string | undefined
  readonly "Parent Relationship"?: string | undefined
  readonly Plans?: ReadonlyArray<PlanNode> | undefined
}
const Explained = Schema.parseJson(Schema.Tuple(Schema.Struct({ Plan: PlanNode })))

const children = (node: PlanNode) => node.Plans ?? []
const isSubPlan = (node: PlanNode) => node["Parent Relationship"] === "SubPlan"
/** The tables a node reads row by row itself, its subqueries left out. */
const readsOf = (node: PlanNode): ReadonlyArray<string> => [
  ...(node["Relation Name"] === undefined ? [] : [node["Relation Name"]]),
  ...children(node).filter((c) => !isSubPlan(c) && c["Parent Relationship"] !== "InitPlan").flatMap(readsOf)
]

/**
 * What is wrong with a plan: a sequential scan of a table that grows with the history, or a
 * subquery run once per row of one (a SubPlan under a node reading such a table; an InitPlan runs
 * once, and a SubPlan over a one-row table such as the outbox cursor is fine).
 */
const faultsOf = (node: PlanNode): ReadonlyArray<string> => [
  ...(node["Node Type"] === "Seq Scan" && grown.includes(node["Relation Name"] ?? "")
    ? [`sequential scan of ${node["Relation Name"]}`]
    : []),
  ...(children(node).some(isSubPlan) && readsOf(node).some((table) => grown.includes(table))
    ? [`subquery per row of ${readsOf(node).filter((table) => grown.includes(table)).join(", ")}`]
    : []),
  ...children(node).flatMap(faultsOf)
]

const explain = (text: string, params: ReadonlyArray<unknown>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const json = yield* sql.unsafe(`EXPLAIN (FORMAT JSON) ${text}`, params).values
    const [{ Plan }] = Schema.decodeUnknownSync(Explained)(typeof json[0]?.[0] === "string" ? json[0][0] : JSON.stringify(json[0]?.[0]))
    const lines = yield* sql.unsafe(`EXPLAIN ${text}`, params).values
    return { faults: faultsOf(Plan), plan: lines.map((r) => String(r[0])).join("\n") }
  })

const roundNames = [
  "outbox fan-out",
  "delivery claim",
  "delivery lease renewal",
  "delivery worker's outlook",
  "outbox depth",
  "attempt and event purge",
  "respondent token purge",
  "idempotency purge",
  "job leases",
  "aggregator's reads of changes",
  "aggregator's poll of its lag"
] as const

const oneLine = (text: string) => text.replace(/\s+/g, " ").trim()

/**
 * SQLite plans by its rules, not by the table's size: a full scan there is one whatever the
 * history. Allowed: the webhooks table and the partial indexes over pending deliveries.
 */
const sqliteFaults = (text: string, params: ReadonlyArray<unknown>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const steps = decodeAs(Schema.Array(Schema.Struct({ detail: Schema.String })), yield* sql.unsafe(`EXPLAIN QUERY PLAN ${text}`, params))
    const details = steps.map((step) => step.detail)
    const faults = details.filter((detail) =>
      /^SCAN /.test(detail) && !/^SCAN (w|webhooks|CONSTANT ROW)\b/.test(detail) &&
      !/USING (COVERING )?INDEX deliveries_(due|leased)\b/.test(detail)
    )
    return faults.length === 0 ? [] : [`${faults.join("; ")} in\n${oneLine(text)}\n${details.join("\n")}`]
  })

describe.skipIf(testDatabase === "postgres")("on SQLite", () =>
  layer(RoundsLive.pipe(Layer.provideMerge(TestDatabase())), { timeout: 120_000, excludeTestServices: true })(
    "background statements",
    (it) => {
      for (const name of roundNames) {
        it.effect(`${name}: no statement scans a table that grows with the history`, () =>
          Effect.gen(function*() {
            const statements = (yield* Rounds).get(name) ?? []
            expect(statements.length).toBeGreaterThan(0)
            const faults: Array<string> = []
            for (const [text, params] of statements) faults.push(...(yield* sqliteFaults(text, params)))
            expect(faults.join("\n\n"), name).toBe("")
          }))
      }
    }
  ))

describe.runIf(testDatabase === "postgres")("on PostgreSQL", () =>
  layer(RoundsLive.pipe(Layer.provideMerge(TestDatabase())), { timeout: 120_000, excludeTestServices: true })(
    "background statements over 30 days of history, never analyzed",
    (it) => {
      for (const name of roundNames) {
        it.effect(`${name}: every statement walks an index`, () =>
          Effect.gen(function*() {
            const statements = (yield* Rounds).get(name) ?? []
            expect(statements.length).toBeGreaterThan(0)
            const faults: Array<string> = []
            for (const [text, params] of statements) {
              const { faults: found, plan } = yield* explain(text, params)
              if (found.length > 0) faults.push(`${found.join("; ")} in\n${oneLine(text)}\n${plan}`)
            }
            expect(faults.join("\n\n"), name).toBe("")
          }))
      }

      it.effect("delivery claim: each webhook's due deliveries come from deliveries_claim in order, no sort per webhook", () =>
        Effect.gen(function*() {
          const [claim] = (yield* Rounds).get("delivery claim") ?? []
          expect(claim).toBeDefined()
          const { plan } = yield* explain(...(claim ?? ["", []]))
          const perWebhook = plan.slice(plan.indexOf("Limit"))
          expect(perWebhook).toMatch(/^Limit.*\n\s+->\s+Index Scan using deliveries_claim on deliveries/)
        }))
    }
  ))
