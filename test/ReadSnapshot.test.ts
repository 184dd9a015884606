import { describe, expect, it } from "@effect/vitest"
import { Effect, Ref, Schema } from "effect"
import { ResponseId, SurveyId } from "../src/Domain/Ids.js"
import { SurveyResponse } from "../src/Domain/Response.js"
import { clientAt } from "./support/ApiClient.js"
import { outsideStatements } from "./support/OutsideStatements.js"
import { TOKENS } from "./support/Fixtures.js"
import { respondentFixture } from "./support/RespondentFixtures.js"
import { PROCESS_TEST_TIMEOUT, request, type ServeProcess, serveProcess, sharedDatabase, within } from "./support/ServeProcess.js"

// Respondents save while an integrator reads each response by id and the responses list, over two
// `serve` processes on one database: every response answered must be a version some save
// committed, never one version's row with another's answers.

const Page = Schema.parseJson(Schema.Struct({ respondentToken: Schema.String }))

/** One committed version of one response. */
const versionKey = (read: SurveyResponse) => `${read.id} ${read.updatedAt}`
/** Every field of a version, for comparison. */
const fieldsOf = (read: SurveyResponse) => JSON.stringify(Schema.encodeSync(SurveyResponse)(read))
const main = SurveyId.make("srv_main")

/** A serve process with the integrator's typed client of it. */
const integratorAt = (server: ServeProcess) =>
  Effect.map(clientAt(server.base, TOKENS.editor), (api) => ({ base: server.base, api }))
type Served = Effect.Effect.Success<ReturnType<typeof integratorAt>>

/** Two responses at a time, each saved `saves` times; the last save completes it. */
const writers = 2
const responsesPerWriter = 8
const saves = 12
/** Reads in all, at most: the readers stop earlier once the writers are done. */
const maxReads = 6000

/** The answers of save `n` of response `r`: every save changes each of them. */
const answersOf = (r: number, n: number) => [
  { questionId: "q_text", values: [`response ${r}, save ${n}`] },
  { questionId: "q_pick", values: n % 2 === 0 ? ["a"] : ["b", "c"] },
  { questionId: "q_num", values: [String(n)] }
]

/**
 * Writers save while readers read; `stale` moves the survey's answer layout after every save, as a
 * question change does, so that reads mostly find renderings that are not current and assemble
 * answers from the answer rows.
 */
const race = (stale: boolean) =>
  Effect.gen(function*() {
    const db = yield* sharedDatabase(respondentFixture)
    const a = yield* integratorAt(yield* serveProcess(db.flags))
    const b = yield* integratorAt(yield* serveProcess(db.flags))
    const readOne = (server: Served, id: string) => server.api.responses.get({ path: { id: main, responseId: ResponseId.make(id) } })
    /**
     * Each committed version by its response and updatedAt, as its writer read it back right after
     * the save (on PostgreSQL, saves of two responses in flight at once may share an instant).
     */
    const committed = new Map<string, SurveyResponse>()
    const reads = { byId: new Array<SurveyResponse>(), list: new Array<SurveyResponse>() }
    let requests = 0
    /** The responses written so far, latest last. */
    const written = yield* Ref.make<ReadonlyArray<string>>([])
    const writing = yield* Ref.make(writers)
    const outside = yield* Effect.provide(outsideStatements, db.config)

    const record = (server: Served, id: string) =>
      Effect.gen(function*() {
        // As a question change does.
        if (stale) yield* outside("UPDATE surveys SET answer_layout = answer_layout + 1 WHERE id = 'srv_main'")
        const version = yield* readOne(server, id)
        committed.set(versionKey(version), version)
      })

    const writer = (w: number) =>
      Effect.gen(function*() {
        const server = w % 2 === 0 ? a : b
        for (let i = 0; i < responsesPerWriter; i++) {
          const r = w * responsesPerWriter + i
          // Raw: the survey page is outside the HttpApi.
          const page = yield* request(`${server.base}/s/srv_main`, { headers: { accept: "application/json" } })
          const respondent = yield* clientAt(server.base, Schema.decodeUnknownSync(Page)(page.text).respondentToken)
          const { responseId: id } = yield* respondent.respondent.start({
            payload: { answers: answersOf(r, 0), finished: false },
            headers: {}
          })
          yield* record(server, id)
          yield* Ref.update(written, (ids) => [...ids, id])
          for (let n = 1; n < saves; n++) {
            yield* respondent.respondent.save({
              path: { responseId: id },
              payload: { answers: answersOf(r, n), finished: n === saves - 1 }
            })
            yield* record(server, id)
          }
        }
      }).pipe(Effect.ensuring(Ref.update(writing, (n) => n - 1)))

    /** Reads the responses being saved (by id, or the list), over both processes, until the writers are done. */
    const reader = (server: Served, by: "byId" | "list") =>
      Effect.gen(function*() {
        while ((yield* Ref.get(writing)) > 0 && requests < maxReads) {
          const ids = yield* Ref.get(written)
          const id = ids[ids.length - 1 - (requests % writers)]
          if (id === undefined) {
            yield* Effect.yieldNow()
            continue
          }
          requests++
          if (by === "byId") reads.byId.push(yield* readOne(server, id))
          else {
            const page = yield* server.api.responses.list({ path: { id: main }, urlParams: { limit: 100 } })
            reads.list.push(...page.data.filter((item) => ids.includes(item.id)))
          }
        }
      })

    yield* within(
      "the saves and the reads beside them",
      Effect.all([
        ...Array.from({ length: writers }, (_, w) => writer(w)),
        reader(a, "byId"),
        reader(b, "byId"),
        reader(b, "list"),
        reader(a, "list")
      ], { concurrency: "unbounded", discard: true })
    )

    expect(committed.size).toBe(writers * responsesPerWriter * saves)
    const mixed = (all: ReadonlyArray<SurveyResponse>) =>
      all.filter((read) => {
        const version = committed.get(versionKey(read))
        return version === undefined || fieldsOf(version) !== fieldsOf(read)
      })
    const found = { byId: mixed(reads.byId), list: mixed(reads.list) }
    expect(reads.byId.length).toBeGreaterThan(0)
    expect(reads.list.length).toBeGreaterThan(0)
    expect({
      byId: { reads: reads.byId.length, mixed: found.byId.length, first: found.byId[0] },
      list: { reads: reads.list.length, mixed: found.list.length, first: found.list[0] }
    }).toEqual({
      byId: { reads: reads.byId.length, mixed: 0, first: undefined },
      list: { reads: reads.list.length, mixed: 0, first: undefined }
    })
  }).pipe(Effect.scoped)

describe("responses read while they are saved", () => {
  it.live("are each one committed version: updatedAt, answers and completed from the same save", () => race(false), PROCESS_TEST_TIMEOUT)

  it.live("are each one committed version while their renderings are stale, assembled from answer rows", () =>
    race(true), PROCESS_TEST_TIMEOUT)
})
