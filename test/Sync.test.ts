import { HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { describe, expect, it, layer } from "@effect/vitest"
import { Clock, Deferred, Effect, FastCheck as fc, Fiber, Option, Ref, Schema, TestClock } from "effect"
import { Api } from "../src/Api.js"
import { ResponseId, SurveyId } from "../src/Domain/Ids.js"
import type { SurveyResponse } from "../src/Domain/Response.js"
import { toIso } from "../src/Domain/Time.js"
import type { ResponsePage, ResponsePageParams } from "../src/Responses/Api.js"
import { answerDocument } from "../src/Responses/AnswerDocumentRepo.js"
import { type Change, ChangeClockRepo } from "../src/Responses/ChangeClockRepo.js"
import { ResponseRepo } from "../src/Responses/ResponseRepo.js"
import { Transactions } from "../src/Sql/Transactions.js"
import { clientFor, outcomeOf } from "./support/ApiClient.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { outsideConnection, waitingOrDone } from "./support/OutsideConnection.js"
import { bodyOf, call, get, testDatabase, TestServer } from "./support/TestServer.js"

/** The typed client of the API, as one key or one respondent token. */
type Client = Effect.Effect.Success<ReturnType<typeof clientFor>>
type Item = SurveyResponse
type Page = typeof ResponsePage.Type
type ListParams = typeof ResponsePageParams.Type
const PageOpen = Schema.Struct({ respondentToken: Schema.String })

/** The editor's client: made once a test, as each client is built from the whole API. */
const editor = clientFor(TOKENS.editor)

const list = (api: Client, surveyId: string, urlParams: ListParams = {}) =>
  api.responses.list({ path: { id: SurveyId.make(surveyId) }, urlParams })

const ids = (page: { readonly data: ReadonlyArray<Item> }) => page.data.map((r) => r.id)

/**
 * A respondent of a published survey: the typed client of the respondent API sending the token its
 * page hands out (raw: the page is outside the HttpApi). The group's client alone, as the property
 * tests make one for every respondent and a client of the whole API is built from all its endpoints.
 */
const respondentOf = (surveyId: string) =>
  Effect.gen(function*() {
    const res = yield* call("GET", `/s/${surveyId}`, { headers: { accept: "application/json" } })
    expect(res.status).toBe(200)
    const token = bodyOf(PageOpen, res).respondentToken
    const httpClient = HttpClient.mapRequest(yield* HttpClient.HttpClient, HttpClientRequest.bearerToken(token))
    return yield* HttpApiClient.group(Api, { group: "respondent", httpClient })
  })

type Respondent = Effect.Effect.Success<ReturnType<typeof respondentOf>>

/** Saves one answer to `questionId` as `respondent`: a new response, or `responseId` again; answers the response's id. */
const save = (respondent: Respondent, questionId: string, finished: boolean, responseId?: string) => {
  const payload = { answers: [{ questionId, values: [`v${Math.random()}`] }], finished }
  return responseId === undefined
    ? Effect.map(respondent.start({ payload, headers: {} }), (saved) => saved.responseId)
    : Effect.map(respondent.save({ path: { responseId }, payload }), (saved) => saved.responseId)
}

/** A published survey with one free-text question, written straight into the database. */
const newSurvey = (surveyId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`INSERT INTO surveys (id, workspace_id, title, status, created_at, updated_at)
      VALUES (${surveyId}, 'ws_a', 'Sync', 'published', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')`
    yield* sql`INSERT INTO questions (id, survey_id, type, label, position) VALUES (${`${surveyId}_q`}, ${surveyId}, 'textarea', 'Say', 1)`
    return `${surveyId}_q`
  }).pipe(Effect.orDie)

layer(TestServer(baseFixture))("sync by change", (it) => {
  it.effect("updatedAt is the createdAt until the first change, and completing is a change", () =>
    Effect.gen(function*() {
      const api = yield* editor
      const page = yield* list(api, "srv_main")
      expect(page.data.map((r) => [r.id, r.createdAt, r.updatedAt])).toEqual([
        ["rsp_1", "2026-01-10T00:00:00.000Z", "2026-01-10T00:05:00.000Z"],
        ["rsp_2", "2026-01-11T00:00:00.000Z", "2026-01-11T00:00:00.000Z"],
        ["rsp_3", "2026-01-12T00:00:00.000Z", "2026-01-12T00:01:00.000Z"]
      ])
      const question = yield* newSurvey("srv_sync_basic")
      yield* TestClock.setTime(Date.parse("2026-03-01T10:00:00.000Z"))
      const respondent = yield* respondentOf("srv_sync_basic")
      const id = yield* save(respondent, question, false)
      const created = yield* api.responses.get({ path: { id: SurveyId.make("srv_sync_basic"), responseId: ResponseId.make(id) } })
      expect([created.createdAt, created.updatedAt]).toEqual(["2026-03-01T10:00:00.000Z", "2026-03-01T10:00:00.000Z"])
      yield* TestClock.setTime(Date.parse("2026-03-01T10:05:00.000Z"))
      yield* save(respondent, question, true, id)
      const done = (yield* list(api, "srv_sync_basic", { updatedAfter: "2026-03-01T10:00:00.001Z" })).data
      expect(done.map((r) => [r.id, r.createdAt, r.updatedAt, r.completedAt])).toEqual([
        [id, "2026-03-01T10:00:00.000Z", "2026-03-01T10:05:00.000Z", "2026-03-01T10:05:00.000Z"]
      ])
    }))

  it.effect("lists by updatedAt then id, inclusive, combinable with status, paged by its own cursors", () =>
    Effect.gen(function*() {
      const api = yield* editor
      const changedAfter = (updatedAfter: string, more: ListParams = {}) => list(api, "srv_main", { updatedAfter, ...more })
      expect(ids(yield* changedAfter("2026-01-10T00:05:00.000Z"))).toEqual(["rsp_1", "rsp_2", "rsp_3"])
      expect(ids(yield* changedAfter("2026-01-10T00:05:00.001Z"))).toEqual(["rsp_2", "rsp_3"])
      // Another offset names the same instant.
      expect(ids(yield* changedAfter("2026-01-11T01:00:00+01:00"))).toEqual(["rsp_2", "rsp_3"])
      expect(ids(yield* changedAfter("2026-01-01T00:00:00Z", { status: "completed" }))).toEqual(["rsp_1", "rsp_3"])
      expect(ids(yield* changedAfter("2026-01-01T00:00:00Z", { status: "incomplete" }))).toEqual(["rsp_2"])

      const first = yield* changedAfter("2026-01-01T00:00:00Z", { limit: 2 })
      expect(ids(first)).toEqual(["rsp_1", "rsp_2"])
      const cursor = first.nextCursor ?? ""
      expect(ids(yield* changedAfter("2026-01-01T00:00:00Z", { limit: 2, cursor }))).toEqual(["rsp_3"])
    }))

  it.effect("bad input: no instant, both filters, a cursor of another order or filter; 400 naming the parameter", () =>
    Effect.gen(function*() {
      const api = yield* editor
      const byCreated = (yield* list(api, "srv_main", { limit: 1 })).nextCursor ?? ""
      const byChange = (yield* list(api, "srv_main", { limit: 1, updatedAfter: "2026-01-01T00:00:00Z" })).nextCursor ?? ""
      // Raw: instants that are no ISO 8601 instant with an offset, which the contract's parameter refuses.
      for (const query of ["yesterday", "2026-01-11", "2026-01-11T00:00:00", "2026-02-30T00:00:00Z", ""]) {
        const res = yield* get(`/api/v1/surveys/srv_main/responses?updatedAfter=${query}`, TOKENS.editor)
        expect(res.status, query).toBe(400)
        expect(res.body, query).toMatchObject({ code: "invalid_request", issues: [{ path: "updatedAfter" }] })
      }
      const since = "2026-01-01T00:00:00Z"
      const cases: ReadonlyArray<readonly [ListParams, string]> = [
        [{ updatedAfter: since, createdAfter: since }, "updatedAfter"],
        [{ updatedAfter: since, cursor: byCreated }, "cursor"],
        [{ cursor: byChange }, "cursor"],
        [{ updatedAfter: "2026-01-02T00:00:00Z", cursor: byChange }, "cursor"],
        [{ updatedAfter: since, status: "completed", cursor: byChange }, "cursor"]
      ]
      for (const [urlParams, param] of cases) {
        const refused = yield* Effect.flip(list(api, "srv_main", urlParams))
        expect(refused, JSON.stringify(urlParams)).toMatchObject({ _tag: "InvalidRequest", issues: [{ path: param }] })
      }
      const csv = api.responses.list({
        path: { id: SurveyId.make("srv_main") },
        urlParams: { format: "csv", updatedAfter: since, createdAfter: since }
      })
      expect(yield* outcomeOf(csv)).toBe("InvalidRequest")
    }))

  it.effect("the CSV export takes updatedAfter as a filter and keeps its columns", () =>
    Effect.gen(function*() {
      // Raw: with `format=csv` the list answers CSV, which the client reads as the page it declares.
      const res = yield* get("/api/v1/surveys/srv_main/responses?format=csv&updatedAfter=2026-01-11T00:00:00Z", TOKENS.editor)
      expect(res.status).toBe(200)
      const lines = res.text.trimEnd().split("\r\n")
      expect(lines[0]?.startsWith("responseId,surveyId,externalUserId,completed,createdAt,completedAt,")).toBe(true)
      expect(lines.slice(1).map((l) => l.split(",")[0])).toEqual(["rsp_2", "rsp_3"])
    }))

  it.effect("changes within one millisecond, or with the clock stepped back, still get growing updatedAt", () =>
    Effect.gen(function*() {
      const question = yield* newSurvey("srv_sync_burst")
      yield* TestClock.setTime(Date.parse("2026-04-01T00:00:00.000Z"))
      const respondent = yield* respondentOf("srv_sync_burst")
      const a = yield* save(respondent, question, false)
      const b = yield* save(respondent, question, false)
      yield* TestClock.setTime(Date.parse("2026-03-31T00:00:00.000Z"))
      yield* save(respondent, question, false, a)
      const page = yield* list(yield* editor, "srv_sync_burst", { updatedAfter: "2020-01-01T00:00:00Z" })
      expect(page.data.map((r) => [r.id, r.updatedAt])).toEqual([
        [b, "2026-04-01T00:00:00.001Z"],
        [a, "2026-04-01T00:00:00.002Z"]
      ])
    }))
})

type Op =
  | { readonly kind: "start"; readonly finished: boolean }
  | { readonly kind: "save"; readonly target: number; readonly finished: boolean }
  | { readonly kind: "page" }
  | { readonly kind: "clock"; readonly deltaMillis: number }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("start" as const), finished: fc.boolean() }) },
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant("save" as const), target: fc.nat({ max: 9 }), finished: fc.boolean() })
  },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("page" as const) }) },
  // The wall clock stands still (bursts within one millisecond), moves on, or steps back.
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant("clock" as const), deltaMillis: fc.integer({ min: -5000, max: 5000 }) })
  }
)

/**
 * The case random search rarely finds: a walk has read one of two responses stored in the same
 * millisecond, that one changes within the same millisecond (whichever of the two it is), and a
 * later change follows. Were updatedAt allowed to repeat, the change would sort behind the cursor
 * and before the largest updatedAt seen, and no poll would return it.
 */
const changeBehindTheCursor: ReadonlyArray<Op> = [
  { kind: "start", finished: false },
  { kind: "start", finished: false },
  { kind: "page" },
  { kind: "save", target: 0, finished: false },
  { kind: "save", target: 1, finished: false },
  { kind: "clock", deltaMillis: 5 },
  { kind: "start", finished: false }
]

let run = 0

/**
 * An integrator keeping a copy of one survey's responses: it reads pages of `limit` with
 * `updatedAfter` = the largest updatedAt it has seen when its previous walk ended, and upserts
 * what it reads by id.
 */
const integrator = (api: Client, surveyId: string, limit: number) => {
  const copy = new Map<string, Item>()
  let largest = "1970-01-01T00:00:00.000Z"
  let cursor: string | null = null
  let walkFrom = largest

  const readPage = Effect.gen(function*() {
    const page = yield* list(api, surveyId, { updatedAfter: walkFrom, limit, ...(cursor === null ? {} : { cursor }) })
    for (const item of page.data) {
      const known = copy.get(item.id)
      if (known === undefined || known.updatedAt <= item.updatedAt) copy.set(item.id, item)
      if (item.updatedAt > largest) largest = item.updatedAt
    }
    cursor = page.nextCursor
    // A finished walk: the next poll starts at the largest updatedAt seen.
    if (cursor === null) walkFrom = largest
  })

  /** Finishes the walk in progress, then polls until a poll brings back only what the copy has. */
  const settle = Effect.gen(function*() {
    for (let i = 0; i < 200 && cursor !== null; i++) yield* readPage
    for (let i = 0; i < 50; i++) {
      const before = JSON.stringify([...copy.entries()])
      yield* readPage
      for (let j = 0; j < 200 && cursor !== null; j++) yield* readPage
      if (JSON.stringify([...copy.entries()]) === before) break
    }
    return copy
  })

  return { readPage, settle }
}

/** The survey's responses as they are, walked in createdAt order. */
const truthOf = (api: Client, surveyId: string) =>
  Effect.gen(function*() {
    const truth = new Map<string, Item>()
    let after: string | null = null
    for (let i = 0; i < 100; i++) {
      const page: Page = yield* list(api, surveyId, { limit: 100, ...(after === null ? {} : { cursor: after }) })
      for (const item of page.data) truth.set(item.id, item)
      after = page.nextCursor
      if (after === null) break
    }
    return truth
  })

const sorted = (map: ReadonlyMap<string, Item>) => new Map([...map].sort())

/** Runs `ops` against a fresh survey: saves through the respondent API between an integrator's pages. */
const pollingCopy = (ops: ReadonlyArray<Op>, limit: number) =>
  Effect.gen(function*() {
    const surveyId = `srv_poll_${run++}`
    const question = yield* newSurvey(surveyId)
    yield* TestClock.setTime(Date.parse("2026-05-01T00:00:00.000Z"))
    const api = yield* editor
    const respondent = yield* respondentOf(surveyId)
    const started: Array<{ id: string; finished: boolean }> = []
    const copy = integrator(api, surveyId, limit)
    for (const op of ops) {
      switch (op.kind) {
        case "start":
          started.push({ id: yield* save(respondent, question, op.finished), finished: op.finished })
          break
        case "save": {
          const target = started[op.target % Math.max(1, started.length)]
          if (target === undefined || target.finished) break
          yield* save(respondent, question, op.finished, target.id)
          target.finished = op.finished
          break
        }
        case "page":
          yield* copy.readPage
          break
        case "clock":
          yield* TestClock.setTime(Date.parse("2026-05-01T00:00:00.000Z") + op.deltaMillis)
          break
      }
    }
    const truth = yield* truthOf(api, surveyId)
    expect(truth.size).toBe(started.length)
    expect(sorted(yield* copy.settle)).toEqual(sorted(truth))
  })

/** Each writer saves through its own respondent token: a new response, or its last unfinished one again. */
const writerArb = fc.array(
  fc.record({ fresh: fc.boolean(), finished: fc.boolean(), tickMillis: fc.integer({ min: 0, max: 2 }) }),
  { minLength: 1, maxLength: 8 }
)
type Saves = typeof writerArb extends fc.Arbitrary<infer A> ? A : never

/**
 * Writers and the integrator run at once: the integrator's pages are read on the service's read
 * connection while the writers' transactions commit on the other.
 */
const concurrentCopy = (writers: ReadonlyArray<Saves>, limit: number) =>
  Effect.gen(function*() {
    const surveyId = `srv_poll_${run++}`
    const question = yield* newSurvey(surveyId)
    yield* TestClock.setTime(Date.parse("2026-05-01T00:00:00.000Z"))
    const api = yield* editor
    const copy = integrator(api, surveyId, limit)
    const done = yield* Ref.make(false)
    const write = (saves: Saves) =>
      Effect.gen(function*() {
        const respondent = yield* respondentOf(surveyId)
        let open: string | null = null
        for (const s of saves) {
          // The wall clock moves on now and then; most saves land within one millisecond of another.
          yield* TestClock.adjust(`${s.tickMillis} millis`)
          if (s.fresh || open === null) open = yield* save(respondent, question, s.finished)
          else yield* save(respondent, question, s.finished, open)
          if (s.finished) open = null
        }
      })
    const poll = Effect.gen(function*() {
      for (let i = 0; i < 2000 && !(yield* Ref.get(done)); i++) yield* copy.readPage
    })
    yield* Effect.all([
      Effect.all(writers.map(write), { concurrency: "unbounded" }).pipe(Effect.ensuring(Ref.set(done, true))),
      poll
    ], { concurrency: "unbounded" })
    expect(sorted(yield* copy.settle)).toEqual(sorted(yield* truthOf(api, surveyId)))
  })

layer(TestServer(baseFixture))("sync by change, polled", (it) => {
  it.effect("a change stored behind the cursor within the millisecond of what a page returned is seen", () =>
    pollingCopy(changeBehindTheCursor, 1))

  it.effect.prop(
    "a copy polling with updatedAfter = the largest updatedAt seen misses no change made between its pages",
    { ops: fc.array(opArb, { minLength: 1, maxLength: 40 }), limit: fc.integer({ min: 1, max: 3 }) },
    ({ limit, ops }) => pollingCopy(ops, limit),
    { fastCheck: { numRuns: 40 } }
  )

  it.effect.prop(
    "a copy polling while several respondents save at once ends equal to the survey's responses",
    { writers: fc.array(writerArb, { minLength: 1, maxLength: 4 }), limit: fc.integer({ min: 1, max: 3 }) },
    ({ limit, writers }) => concurrentCopy(writers, limit),
    { fastCheck: { numRuns: 30 } }
  )
})

const at = (iso: string, plusMillis = 0) => new Date(Date.parse(iso) + plusMillis).toISOString()

/**
 * A save of the survey held open after its stamp, as a save still writing its events would be:
 * answers its instant once stamped, and commits when `release` is done. A new response is
 * inserted first and counted last, as ResponseWriter does. The scope's end releases it too, so
 * that a failed test leaves no transaction open. `stamped` is done once the stamp answered, which
 * on PostgreSQL waits while another save of the survey holds its clock.
 */
const heldSave = (change: Omit<Change, "rendering">, release: Deferred.Deferred<void>) =>
  Effect.gen(function*() {
    yield* Effect.addFinalizer(() => Deferred.succeed(release, undefined))
    const clock = yield* ChangeClockRepo
    const responses = yield* ResponseRepo
    const transactions = yield* Transactions
    const sql = yield* SqlClient.SqlClient
    const stamped = yield* Deferred.make<string>()
    const draftedAt = toIso(yield* Clock.currentTimeMillis)
    const fiber = yield* Effect.fork(transactions.within(Effect.gen(function*() {
      if (change.created) {
        yield* sql`INSERT INTO responses ${
          sql.insert({
            id: change.responseId,
            surveyId: change.surveyId,
            completed: 0,
            createdAt: draftedAt,
            updatedAt: draftedAt
          })
        }`
      }
      // The rendering of the answers the response holds, as a save stores it with its stamps.
      const found = yield* responses.findWithAnswers(SurveyId.make(change.surveyId), ResponseId.make(change.responseId))
      const answers = Option.match(found, { onNone: () => [], onSome: (saved) => saved.answers })
      const rendering = answerDocument(change.responseId, answers)
      yield* Deferred.succeed(stamped, yield* clock.stamp({ ...change, rendering }))
      yield* Deferred.await(release)
      if (change.created) yield* clock.countingCreated(change.surveyId)
    })).pipe(Effect.orDie))
    return { stamped, fiber } as const
  })

/** Every page of a walk by `updatedAfter=from`, `limit` at a time. */
const walk = (api: Client, surveyId: string, from: string, limit: number) =>
  Effect.gen(function*() {
    const seen: Array<Item> = []
    let cursor: string | null = null
    for (let i = 0; i < 100; i++) {
      const page: Page = yield* list(api, surveyId, { updatedAfter: from, limit, ...(cursor === null ? {} : { cursor }) })
      seen.push(...page.data)
      cursor = page.nextCursor
      if (cursor === null) break
    }
    return seen
  })

const largest = (items: ReadonlyArray<Item>) => items.reduce((max, r) => r.updatedAt > max ? r.updatedAt : max, "")
const changes = (items: ReadonlyArray<Item>) => items.map((r) => [r.id, r.updatedAt])

/** Deletes a response of `surveyId` as the editor: "ok", or the tag of the error. */
const deletion = (api: Client, surveyId: string, responseId: string) =>
  outcomeOf(api.responses.delete({ path: { id: SurveyId.make(surveyId), responseId: ResponseId.make(responseId) } }))

const start = "2026-06-01T00:00:00.000Z"

/** A new survey with two responses, `a` saved at `start` and `b` `laterMillis` after it; `respondent` saves more. */
const twoSaved = (surveyId: string, laterMillis: number) =>
  Effect.gen(function*() {
    const question = yield* newSurvey(surveyId)
    yield* TestClock.setTime(Date.parse(start))
    const respondent = yield* respondentOf(surveyId)
    const a = yield* save(respondent, question, false)
    yield* TestClock.setTime(Date.parse(at(start, laterMillis)))
    const b = yield* save(respondent, question, false)
    return { question, respondent, a, b } as const
  })

// PostgreSQL only: there a save holds its survey's clock row from its stamp to commit, and the
// survey's next save waits for it; on SQLite one writer at a time.
describe.runIf(testDatabase === "postgres")("sync by change while saves of the survey are in flight on PostgreSQL", () => {
  it.effect("a walk lists what is committed; the survey's next save waits its turn and takes a later instant", () =>
    Effect.gen(function*() {
      const api = yield* editor
      const { a, b } = yield* twoSaved("srv_flight_walk", 1000)
      const observer = yield* outsideConnection

      yield* TestClock.setTime(Date.parse(at(start, 2000)))
      const release = yield* Deferred.make<void>()
      const held = yield* heldSave({ surveyId: "srv_flight_walk", responseId: a, created: false, completed: false }, release)
      expect(yield* Deferred.await(held.stamped)).toBe(at(start, 2000))
      // The next save of the survey, at a later time, waits for the held one's commit.
      yield* TestClock.setTime(Date.parse(at(start, 3000)))
      const go = yield* Deferred.make<void>()
      yield* Deferred.succeed(go, undefined)
      const next = yield* heldSave({ surveyId: "srv_flight_walk", responseId: b, created: false, completed: false }, go)
      yield* waitingOrDone(observer, next.fiber)
      expect(yield* Deferred.isDone(next.stamped)).toBe(false)

      const first = yield* walk(api, "srv_flight_walk", "2020-01-01T00:00:00Z", 1)
      expect(changes(first)).toEqual([[a, start], [b, at(start, 1000)]])
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(held.fiber)
      expect(yield* Deferred.await(next.stamped)).toBe(at(start, 3000))
      yield* Fiber.join(next.fiber)

      expect(changes(yield* walk(api, "srv_flight_walk", largest(first), 1))).toEqual([
        [a, at(start, 2000)],
        [b, at(start, 3000)]
      ])
    }).pipe(Effect.scoped, Effect.provide(TestServer(baseFixture))))

  it.effect("a save that waited for its turn follows the instant committed before it, even with the clock stepped back", () =>
    Effect.gen(function*() {
      const api = yield* editor
      const { a, b } = yield* twoSaved("srv_flight_late", 1000)
      const observer = yield* outsideConnection

      yield* TestClock.setTime(Date.parse(at(start, 2000)))
      const release = yield* Deferred.make<void>()
      const held = yield* heldSave({ surveyId: "srv_flight_late", responseId: a, created: false, completed: false }, release)
      expect(yield* Deferred.await(held.stamped)).toBe(at(start, 2000))
      // The clock steps back a minute: the waiting save's statement began before the held one committed.
      yield* TestClock.setTime(Date.parse(at(start, -60_000)))
      const go = yield* Deferred.make<void>()
      yield* Deferred.succeed(go, undefined)
      const next = yield* heldSave({ surveyId: "srv_flight_late", responseId: b, created: false, completed: false }, go)
      yield* waitingOrDone(observer, next.fiber)
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(held.fiber)
      expect(yield* Deferred.await(next.stamped)).toBe(at(start, 2001))
      yield* Fiber.join(next.fiber)

      expect(changes(yield* walk(api, "srv_flight_late", at(start, 1000), 2))).toEqual([[a, at(start, 2000)], [b, at(start, 2001)]])
    }).pipe(Effect.scoped, Effect.provide(TestServer(baseFixture))))

  it.effect("a deletion of the survey's responses waits for a save holding the clock, and keeps the instants from going back", () =>
    Effect.gen(function*() {
      const api = yield* editor
      const { a, b } = yield* twoSaved("srv_flight_delete", 1000)
      const observer = yield* outsideConnection

      yield* TestClock.setTime(Date.parse(at(start, 2000)))
      const release = yield* Deferred.make<void>()
      const held = yield* heldSave({ surveyId: "srv_flight_delete", responseId: a, created: false, completed: false }, release)
      expect(yield* Deferred.await(held.stamped)).toBe(at(start, 2000))
      const deleting = yield* Effect.fork(deletion(api, "srv_flight_delete", b))
      yield* waitingOrDone(observer, deleting)
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(held.fiber)
      expect(yield* Fiber.join(deleting)).toBe("ok")

      // The latest response is deleted next: a later save still follows its instant.
      expect(yield* deletion(api, "srv_flight_delete", a)).toBe("ok")
      yield* TestClock.setTime(Date.parse(start))
      const respondent = yield* respondentOf("srv_flight_delete")
      const c = yield* save(respondent, "srv_flight_delete_q", false)
      expect(changes(yield* walk(api, "srv_flight_delete", start, 10))).toEqual([[c, at(start, 2001)]])
    }).pipe(Effect.scoped, Effect.provide(TestServer(baseFixture))))

  it.effect("two new responses of one survey take turns from the stamp to commit; both count", () =>
    Effect.gen(function*() {
      const api = yield* editor
      const question = yield* newSurvey("srv_flight_pair")
      yield* TestClock.setTime(Date.parse(start))
      const respondent = yield* respondentOf("srv_flight_pair")
      const a = yield* save(respondent, question, true)
      const observer = yield* outsideConnection

      const release = yield* Deferred.make<void>()
      const x = yield* heldSave({ surveyId: "srv_flight_pair", responseId: "rsp_flight_x", created: true, completed: false }, release)
      expect(yield* Deferred.await(x.stamped)).toBe(at(start, 1))
      const go = yield* Deferred.make<void>()
      yield* Deferred.succeed(go, undefined)
      const y = yield* heldSave({ surveyId: "srv_flight_pair", responseId: "rsp_flight_y", created: true, completed: true }, go)
      yield* waitingOrDone(observer, y.fiber)
      expect(yield* Deferred.isDone(y.stamped)).toBe(false)
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(x.fiber)
      expect(yield* Deferred.await(y.stamped)).toBe(at(start, 2))
      yield* Fiber.join(y.fiber)

      expect((yield* api.surveys.get({ path: { id: SurveyId.make("srv_flight_pair") } })).responseCount).toBe(3)
      const after = yield* walk(api, "srv_flight_pair", start, 10)
      expect(after.map((r) => [r.id, r.createdAt, r.updatedAt, r.completedAt])).toEqual([
        [a, start, start, start],
        ["rsp_flight_x", at(start, 1), at(start, 1), null],
        ["rsp_flight_y", at(start, 2), at(start, 2), at(start, 2)]
      ])
    }).pipe(Effect.scoped, Effect.provide(TestServer(baseFixture))))
})

layer(TestServer(baseFixture))("sync by change across deletions", (it) => {
  it.effect("deleting the survey's latest response does not take its instants back", () =>
    Effect.gen(function*() {
      const api = yield* editor
      const { b: latest, question, respondent } = yield* twoSaved("srv_sync_deleted", 5000)
      expect(yield* deletion(api, "srv_sync_deleted", latest)).toBe("ok")

      yield* TestClock.setTime(Date.parse(start))
      const next = yield* save(respondent, question, false)
      const seen = yield* walk(api, "srv_sync_deleted", at(start, 5000), 10)
      expect(changes(seen)).toEqual([[next, at(start, 5001)]])
    }))
})
