import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Option, Schema } from "effect"
import type * as Pg from "pg"
import { AggregateRepo } from "../src/Analytics/AggregateRepo.js"
import { Aggregator } from "../src/Analytics/Aggregator.js"
import { ResponseId, SurveyId } from "../src/Domain/Ids.js"
import { EmbedSessionRequest } from "../src/Embeds/Api.js"
import { SettleLockWait } from "../src/Sql/Dialect.js"
import { SurveyLifecycle } from "../src/Surveys/SurveyLifecycle.js"
import { Deliveries } from "../src/Webhooks/Deliveries.js"
import { clientFor, outcomeOf } from "./support/ApiClient.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { bodyOf, call, decodeAs, testDatabase, TestServer } from "./support/TestServer.js"
import { Count } from "./support/StoredRows.js"
import { onOutside, openEventWrite, outsideConnection, serviceLockWaiters, waitingOrDone } from "./support/OutsideConnection.js"
import { eventually } from "./support/WebhookReceiver.js"
import { complete, deliveries, register } from "./support/WebhookWorld.js"

const changeRow = (responseId: string) =>
  `INSERT INTO response_changes (response_id, survey_id, changed_at) VALUES ('${responseId}', 'srv_main', '2026-02-01T00:00:00.000Z')`

/** A change of a response of srv_main, committed. */
const writeChange = (responseId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql.withTransaction(sql.unsafe(changeRow(responseId))).pipe(Effect.orDie))

const maxSeq = (table: "events" | "response_changes") =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(sql.unsafe(`SELECT MAX(seq) AS n FROM ${table}`).pipe(Effect.orDie), (rows) =>
      decodeAs(Schema.Array(Schema.Struct({ n: Schema.NullOr(Schema.Number) })), rows)[0]?.n ?? 0))

/**
 * Runs `reader` (a fan-out or an aggregator step) held half-way on `table`, which an outside
 * transaction locks, and commits `write` meanwhile: the write must not wait for the reader, which
 * is still held after it. Answers what the reader answers once let go.
 */
const writeWhileReaderHeld = <A, E, R, R2>(
  table: string,
  reader: Effect.Effect<A, E, R>,
  write: Effect.Effect<unknown, never, R2>
) =>
  Effect.gen(function*() {
    const holder = yield* outsideConnection
    const observer = yield* outsideConnection
    yield* onOutside(holder, "BEGIN")
    yield* onOutside(holder, `LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`)
    const running = yield* Effect.fork(reader)
    yield* waitingOrDone(observer, running)
    expect(Option.isNone(yield* Fiber.poll(running))).toBe(true)
    yield* write
    expect(Option.isNone(yield* Fiber.poll(running))).toBe(true)
    yield* onOutside(holder, "COMMIT")
    return yield* Fiber.join(running)
  })

// PostgreSQL only: there a row's serial is handed out when it is inserted and its transaction may
// commit after a later-numbered one. On SQLite writers take turns, so the order cannot be built.
describe.runIf(testDatabase === "postgres")("logs read by sequence number on PostgreSQL", () => {
  // These readers wait on purpose for a writer the test holds open, longer than a reader would.
  const heldReadersWait = Effect.provideService(SettleLockWait, 120_000)

  it.effect("an event whose transaction commits after a later-numbered one is still fanned out", () =>
    Effect.gen(function*() {
      yield* register("http://127.0.0.1:9/hook")
      const holder = yield* outsideConnection
      const observer = yield* outsideConnection
      // A completion's transaction has written its event and not yet committed...
      yield* openEventWrite(holder, "evt_late_commit")
      // ...while a later one commits first, with the higher number.
      const early = yield* complete("srv_main")
      const worker = yield* Deliveries
      const fanning = yield* Effect.fork(worker.fanOut(0, 100))
      yield* waitingOrDone(observer, fanning)
      yield* onOutside(holder, "COMMIT")
      yield* Fiber.join(fanning)
      yield* worker.fanOut(0, 100)

      const all = yield* deliveries
      expect(all).toHaveLength(2)
      const cursor = yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql`SELECT last_seq FROM outbox_cursors WHERE name = 'webhooks'`.pipe(
          Effect.orDie,
          Effect.map((rows) => decodeAs(Schema.Array(Schema.Struct({ lastSeq: Schema.Number })), rows))
        ))
      expect(cursor[0]?.lastSeq).toBe(yield* maxSeq("events"))
      expect(early.id).toMatch(/^evt_/)
    }).pipe(Effect.scoped, Effect.provide(TestServer(baseFixture)), heldReadersWait))

  it.effect("an event is not held back while the fan-out moves earlier ones", () =>
    Effect.gen(function*() {
      yield* register("http://127.0.0.1:9/hook")
      yield* complete("srv_main")
      const worker = yield* Deliveries
      // The fan-out held on the table it writes after reading the outbox; an event committed
      // meanwhile would wait for the fan-out's end if the fan-out held the outbox.
      expect(yield* writeWhileReaderHeld("deliveries", worker.fanOut(0, 100), complete("srv_main"))).toBe(1)
      expect(yield* worker.fanOut(0, 100)).toBe(1)
      expect(yield* deliveries).toHaveLength(2)
    }).pipe(Effect.scoped, Effect.provide(TestServer(baseFixture)), heldReadersWait))

  it.effect("a response change whose transaction commits after a later-numbered one is still applied", () =>
    Effect.gen(function*() {
      const aggregator = yield* Aggregator
      const sql = yield* SqlClient.SqlClient
      yield* aggregator.catchUp()
      const holder = yield* outsideConnection
      const observer = yield* outsideConnection
      yield* onOutside(holder, "BEGIN")
      yield* onOutside(
        holder,
        `INSERT INTO response_changes (response_id, survey_id, changed_at) VALUES ('rsp_1', 'srv_main', '2026-02-01T00:00:00.000Z')`
      )
      yield* sql.withTransaction(
        sql`INSERT INTO response_changes (response_id, survey_id, changed_at) VALUES ('rsp_2', 'srv_main', '2026-02-01T00:00:00.000Z')`
      ).pipe(Effect.orDie)
      // The aggregator drops the changes it consumed: the position is compared with the newest number.
      const newest = yield* maxSeq("response_changes")
      const stepping = yield* Effect.fork(aggregator.step())
      yield* waitingOrDone(observer, stepping)
      yield* onOutside(holder, "COMMIT")
      expect(yield* Fiber.join(stepping)).toBe(2)
      const position = decodeAs(
        Schema.Array(Schema.Struct({ seq: Schema.Number })),
        yield* sql`SELECT seq FROM analytics_position WHERE id = 1`.pipe(Effect.orDie)
      )
      expect(position[0]?.seq).toBe(newest)
    }).pipe(Effect.scoped, Effect.provide(TestServer(baseFixture)), heldReadersWait))

  it.effect("a change numbered past the settled position is read by the next step, not this one", () =>
    Effect.gen(function*() {
      const aggregator = yield* Aggregator
      const repo = yield* AggregateRepo
      yield* aggregator.catchUp()
      const from = yield* repo.position
      yield* writeChange("rsp_1")
      const upTo = yield* repo.settledChanges
      // After the settled read: one change still being written, and a later-numbered one committed.
      const holder = yield* outsideConnection
      yield* onOutside(holder, "BEGIN")
      yield* onOutside(holder, changeRow("rsp_2"))
      yield* writeChange("rsp_3")
      const read = yield* repo.changesAfter(from, 1000, upTo)
      expect(read.map((c) => c.responseId)).toEqual(["rsp_1"])
      yield* onOutside(holder, "COMMIT")
      expect(yield* aggregator.catchUp()).toBe(3)
    }).pipe(Effect.scoped, Effect.provide(TestServer(baseFixture)), heldReadersWait))

  it.effect("a survey's rebuild waits for a step of another process, as a step waits for it", () =>
    Effect.gen(function*() {
      const aggregator = yield* Aggregator
      yield* aggregator.catchUp()
      const stepper = yield* outsideConnection
      const observer = yield* outsideConnection
      // Another process's step holds the aggregation's position until it commits.
      yield* onOutside(stepper, "BEGIN")
      yield* onOutside(stepper, "SELECT seq FROM analytics_position WHERE id = 1 FOR UPDATE")
      const rebuilding = yield* Effect.fork(aggregator.rebuild(SurveyId.make("srv_main")))
      yield* waitingOrDone(observer, rebuilding)
      expect(Option.isNone(yield* Fiber.poll(rebuilding))).toBe(true)
      yield* onOutside(stepper, "COMMIT")
      expect(yield* Fiber.join(rebuilding)).toBeGreaterThan(0)
    }).pipe(Effect.scoped, Effect.provide(TestServer(baseFixture)), heldReadersWait))

  it.effect("a save's change is not held back while the aggregator applies earlier ones", () =>
    Effect.gen(function*() {
      const aggregator = yield* Aggregator
      yield* aggregator.catchUp()
      yield* writeChange("rsp_1")
      // The step held on a table it reads after the changes; a change committed meanwhile would
      // wait for the step's end if the step held the log.
      expect(yield* writeWhileReaderHeld("analytics_contributions", aggregator.step(), writeChange("rsp_2"))).toBe(1)
      expect(yield* aggregator.step()).toBe(1)
    }).pipe(Effect.scoped, Effect.provide(TestServer(baseFixture)), heldReadersWait))

  it.effect("a settling reader waits a moment at most for a writer held open, and saves meanwhile are not held behind it", () =>
    Effect.gen(function*() {
      const aggregator = yield* Aggregator
      yield* aggregator.catchUp()
      const holder = yield* outsideConnection
      yield* onOutside(holder, "BEGIN")
      yield* onOutside(holder, changeRow("rsp_1"))
      // The writer is still open: the step answers without reading past it.
      expect(yield* aggregator.step()).toBe(0)
      // No reader's lock is queued ahead of a save's change.
      yield* writeChange("rsp_2")
      yield* onOutside(holder, "COMMIT")
      expect(yield* aggregator.catchUp()).toBe(2)
    }).pipe(Effect.scoped, Effect.provide(TestServer(baseFixture))))
})

const PageToken = Schema.Struct({ respondentToken: Schema.String })
const srvMain = { path: { id: SurveyId.make("srv_main") } }

/** A finished save of `srv_main` (its one required question answered). */
const completion = { answers: [{ questionId: "q_pick", values: ["a"] }], finished: true }

/** The respondent token of `srv_main`'s page (raw: the page is outside the HttpApi). */
const pageToken = Effect.map(
  call("GET", "/s/srv_main", { headers: { accept: "application/json" } }),
  (page) => bodyOf(PageToken, page).respondentToken
)

describe.runIf(testDatabase === "postgres")("a survey's move while a log reader settles the outbox, on PostgreSQL", () => {
  /** Until at least `n` connections to the test's database wait for a lock. */
  const lockWaiters = (observer: Pg.Client, n: number) =>
    eventually(
      Effect.map(
        onOutside(observer, "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"),
        (result) => Number(result.rows[0]?.n ?? 0)
      ),
      (waiting) => waiting >= n
    )

  const committedStatus = (observer: Pg.Client) =>
    Effect.map(
      onOutside(observer, "SELECT status FROM surveys WHERE id = 'srv_main'"),
      (result) => decodeAs(Schema.Array(Schema.Struct({ status: Schema.String })), result.rows)[0]?.status
    )

  /**
   * Runs `move` (a close of srv_main) while a save of srv_main that has written its events is in
   * flight and a log reader settles the outbox, which waits for that save. The save then takes the
   * survey's row, which it takes last, and must get it before the move changed anything; then the
   * save and the reader end, and the move's result is answered.
   */
  const closeWhileSettling = <A, E, R>(move: Effect.Effect<A, E, R>) =>
    Effect.gen(function*() {
      const save = yield* outsideConnection
      const reader = yield* outsideConnection
      const observer = yield* outsideConnection
      yield* openEventWrite(save, "evt_save_in_flight")
      const settling = yield* Effect.fork(
        Effect.zipRight(onOutside(reader, "BEGIN"), onOutside(reader, "LOCK TABLE events IN SHARE MODE"))
      )
      yield* lockWaiters(observer, 1)
      const moving = yield* Effect.fork(move)
      yield* lockWaiters(observer, 2)
      yield* onOutside(save, "UPDATE surveys SET response_count = response_count WHERE id = 'srv_main'")
      expect(yield* committedStatus(observer)).toBe("published")
      expect(Option.isNone(yield* Fiber.poll(moving))).toBe(true)
      yield* onOutside(save, "COMMIT")
      yield* Fiber.join(settling)
      yield* onOutside(reader, "COMMIT")
      return yield* Fiber.join(moving)
    })

  it.effect("waits for the outbox before it holds the survey's row, so a save in flight is not stood still", () =>
    Effect.gen(function*() {
      const lifecycle = yield* SurveyLifecycle
      const moved = yield* closeWhileSettling(lifecycle.apply(SurveyId.make("srv_main"), "close"))
      expect(moved.status).toBe("closed")
    }).pipe(Effect.scoped, Effect.provide(TestServer(baseFixture))))

  it.effect("the same over the API: the move waits for the outbox before it claims the survey's version", () =>
    Effect.gen(function*() {
      const api = yield* clientFor(TOKENS.editor)
      const answer = yield* closeWhileSettling(api.authoring.close({ ...srvMain, headers: {} }))
      expect(answer.status).toBe("closed")
    }).pipe(Effect.scoped, Effect.provide(TestServer(baseFixture))))
})

describe.runIf(testDatabase === "postgres")("a save and a deletion of one response at once on PostgreSQL", () => {
  it.effect("the save that comes second finds the response gone (404) and writes nothing for it", () =>
    Effect.gen(function*() {
      const respondent = yield* clientFor(yield* pageToken)
      const { responseId } = yield* respondent.respondent.start({
        payload: { answers: [{ questionId: "q_text", values: ["first"] }], finished: false },
        headers: {}
      })
      const api = yield* clientFor(TOKENS.editor)
      const holder = yield* outsideConnection
      const observer = yield* outsideConnection
      // Something holds the response's row (a save in progress) while the deletion and then a save arrive.
      yield* onOutside(holder, "BEGIN")
      yield* onOutside(holder, `SELECT id FROM responses WHERE id = '${responseId}' FOR UPDATE`)
      const deleting = yield* Effect.fork(
        outcomeOf(api.responses.delete({ path: { ...srvMain.path, responseId: ResponseId.make(responseId) } }))
      )
      yield* eventually(serviceLockWaiters(observer), (n) => n === 1)
      const saving = yield* Effect.fork(outcomeOf(respondent.respondent.save({ path: { responseId }, payload: completion })))
      yield* eventually(serviceLockWaiters(observer), (n) => n === 2)
      yield* onOutside(holder, "COMMIT")

      expect(yield* Fiber.join(deleting)).toBe("ok")
      expect(yield* Fiber.join(saving)).toBe("NotFound")
      const sql = yield* SqlClient.SqlClient
      const left = decodeAs(Schema.Array(Count), yield* sql`
        SELECT (SELECT count(*) FROM responses WHERE id = ${responseId})
             + (SELECT count(*) FROM answers WHERE response_id = ${responseId})
             + (SELECT count(*) FROM events WHERE response_id = ${responseId} AND type <> 'response.deleted'
                  AND payload LIKE '%"response":{%') AS n`.pipe(Effect.orDie))
      expect(left[0]?.n).toBe(0)
    }).pipe(Effect.scoped, Effect.provide(TestServer(baseFixture))))
})

/** The respondent token of an embed session's page for `externalUserId`: a person whose survey page is open. */
const embedToken = (externalUserId: string) =>
  Effect.gen(function*() {
    const api = yield* clientFor(TOKENS.editor)
    const embed = yield* api.embedSessions.create({ ...srvMain, payload: new EmbedSessionRequest({ externalUserId }), headers: {} })
    // Raw: the embed page is outside the HttpApi.
    const page = yield* call("GET", new URL(embed.embedUrl).pathname, { headers: { accept: "application/json" } })
    return bodyOf(PageToken, page).respondentToken
  })

describe.runIf(testDatabase === "postgres")("an erasure and a save of the same person at once on PostgreSQL", () => {
  it.effect("a save that comes after the erasure began is refused, and nothing of the person is left", () =>
    Effect.gen(function*() {
      // The person's survey page is open: an embed session's token, made before the erasure.
      const respondent = yield* clientFor(yield* embedToken("person-racing"))
      const api = yield* clientFor(TOKENS.editor)
      const holder = yield* outsideConnection
      const observer = yield* outsideConnection
      // Something holds the person's token row while the erasure and then the save arrive.
      yield* onOutside(holder, "BEGIN")
      yield* onOutside(holder, "SELECT token_hash FROM respondent_tokens WHERE external_user_id = 'person-racing' FOR UPDATE")
      const erasing = yield* Effect.fork(outcomeOf(api.erasures.create({ payload: { externalUserId: "person-racing" } })))
      yield* eventually(serviceLockWaiters(observer), (n) => n === 1)
      const saving = yield* Effect.fork(outcomeOf(respondent.respondent.start({ payload: completion, headers: {} })))
      yield* waitingOrDone(observer, saving, 2)
      yield* onOutside(holder, "COMMIT")

      expect(yield* Fiber.join(erasing)).toBe("ok")
      expect(yield* Fiber.join(saving)).toBe("Unauthorized")
      const sql = yield* SqlClient.SqlClient
      const left = decodeAs(Schema.Array(Count), yield* sql`
        SELECT (SELECT count(*) FROM responses WHERE external_user_id = 'person-racing')
             + (SELECT count(*) FROM respondent_tokens WHERE external_user_id = 'person-racing') AS n`.pipe(Effect.orDie))
      expect(left[0]?.n).toBe(0)
    }).pipe(Effect.scoped, Effect.provide(TestServer(baseFixture))))
})

/** Holds the survey's row on `holder`, as a save counting a new response in its last statement would. */
const holdSurvey = (holder: Pg.Client, survey: string) =>
  Effect.zipRight(
    onOutside(holder, "BEGIN"),
    onOutside(holder, `SELECT id FROM surveys WHERE id = '${survey}' FOR NO KEY UPDATE`)
  )

/** The tables a service connection waiting for a lock has written to (its row-change locks on tables). */
const writtenByWaiter = (observer: Pg.Client) =>
  Effect.map(
    onOutside(
      observer,
      `SELECT DISTINCT l.relation::regclass::text AS name FROM pg_locks l
       JOIN pg_stat_activity a ON a.pid = l.pid
       JOIN pg_class c ON c.oid = l.relation AND c.relkind = 'r'
       WHERE a.application_name = 'survey-service' AND a.wait_event_type = 'Lock'
         AND l.locktype = 'relation' AND l.mode = 'RowExclusiveLock' AND l.granted`
    ),
    (result) => decodeAs(Schema.Array(Schema.Struct({ name: Schema.String })), result.rows).map((r) => r.name).sort()
  )


describe.runIf(testDatabase === "postgres")("the survey's row is taken last in a save on PostgreSQL", () => {
  it.effect("a new response waiting for its survey's count has already written everything else, its survey's clock among it", () =>
    Effect.gen(function*() {
      const respondent = yield* clientFor(yield* pageToken)
      const holder = yield* outsideConnection
      const observer = yield* outsideConnection
      yield* holdSurvey(holder, "srv_main")
      const saving = yield* Effect.fork(outcomeOf(respondent.respondent.start({ payload: completion, headers: {} })))
      yield* eventually(serviceLockWaiters(observer), (n) => n === 1)
      const written = yield* writtenByWaiter(observer)
      yield* onOutside(holder, "COMMIT")
      expect(yield* Fiber.join(saving)).toBe("ok")
      expect(written).toEqual(
        expect.arrayContaining(["answers", "events", "respondent_responses", "response_changes", "response_clock", "responses"])
      )
    }).pipe(Effect.scoped, Effect.provide(TestServer(baseFixture))))

  it.effect("of two saves that may each start an embed link's one response, the second is refused", () =>
    Effect.gen(function*() {
      const respondent = yield* clientFor(yield* embedToken("person-twice"))
      const save = outcomeOf(respondent.respondent.start({ payload: completion, headers: {} }))
      const holder = yield* outsideConnection
      const observer = yield* outsideConnection
      // The first save gets as far as counting its response and waits there; the second comes meanwhile.
      yield* holdSurvey(holder, "srv_main")
      const first = yield* Effect.fork(save)
      yield* eventually(serviceLockWaiters(observer), (n) => n === 1)
      const second = yield* Effect.fork(save)
      yield* waitingOrDone(observer, second, 2)
      yield* onOutside(holder, "COMMIT")

      expect(yield* Fiber.join(first)).toBe("ok")
      expect(yield* Fiber.join(second)).toBe("InvalidRequest")
      const sql = yield* SqlClient.SqlClient
      const stored = decodeAs(Schema.Array(Count), yield* sql`
        SELECT count(*) AS n FROM responses WHERE external_user_id = 'person-twice'`.pipe(Effect.orDie))
      expect(stored[0]?.n).toBe(1)
    }).pipe(Effect.scoped, Effect.provide(TestServer(baseFixture))))
})
