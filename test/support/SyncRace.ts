import { Schema } from "effect"
import { seededRandom } from "../../src/Demo/DemoData.js"
import type { FixtureInput } from "../../src/Fixtures/Fixture.js"
import { baseFixture, TOKENS } from "./Fixtures.js"

/**
 * A race of writers against readers who sync by `updatedAt` (v1-extensions X2.1), over real HTTP
 * to one or more service processes on one database: the guarantee that a poller from the largest
 * `updatedAt` it has seen never misses a change, checked change by change.
 *
 * Writers create, change, complete and delete responses of a few surveys through the respondent
 * API and the integration API, each response written by one writer only, so that a read of the
 * response by id right after its writer's acknowledgement tells the instant of that change. Every
 * save writes `v<n>` (the response's n-th version) into both of its answers.
 *
 * Readers walk `GET /surveys/{id}/responses?updatedAfter=<position>`, following `nextCursor` to its
 * end, then move their position to the largest `updatedAt` seen. After the writers stop, each
 * reader walks until a walk brings nothing new. A change is a version of a response, at instant
 * `u`, committed at the latest when its writer heard back. X2.1 has `updatedAt` follow commit
 * order: whatever is committed when a walk begins, at or above its position, is listed by it or
 * by a later walk before the reader's position passes it. For every change and every reader:
 * - a miss: a walk that began after the change was acknowledged, from at or below `u`, moved the
 *   reader's position past `u` without listing the response at `u` or later (and its deletion had
 *   not begun). The reader's next walks start above `u`: the change is skipped, and without a
 *   later version lost for good;
 * - a late commit: the change was first listed after an earlier walk had already moved the
 *   reader's position past `u`: it committed below an instant a reader had already passed;
 * - lost: the last acknowledged version of a response that was not deleted never reached the
 *   reader at all, although each reader caught up at the end;
 * - a torn read: a listed response whose two answers are of different versions, or whose
 *   `updatedAt` a writer recorded for another version than its answers carry.
 * The lag is the time from a change's acknowledgement to the first page that showed the response
 * at its version or a later one (0 when a page showed it before the writer heard back).
 */

export const RACE_SURVEYS = ["srv_race_a", "srv_race_b", "srv_race_c"] as const
const QUESTIONS = ["q_race_one", "q_race_two"] as const

const t = (day: number) => new Date(Date.UTC(2026, 0, day)).toISOString()

/** The fixture of a race: the base workspace with three published surveys of two optional text questions. */
export const raceFixture: FixtureInput = {
  ...baseFixture,
  surveys: [
    ...(baseFixture.surveys ?? []),
    ...RACE_SURVEYS.map((id) => ({
      id,
      workspaceId: "ws_a",
      title: `Race ${id}`,
      status: "published" as const,
      createdAt: t(1),
      updatedAt: t(2),
      questions: QUESTIONS.map((q, i) => ({ id: q, type: "textarea" as const, label: `Question ${i + 1}`, order: i + 1 }))
    }))
  ]
}

/** The environment a race's processes need: limits above what its writers send. */
export const raceEnv: Readonly<Record<string, string>> = {
  RESPONDENT_LIMIT_PER_ADDRESS: "1000000",
  RESPONDENT_LIMIT_PER_SURVEY: "1000000"
}

export interface RaceReader {
  /** The page size of the reader's walks. */
  readonly limit: number
  /** The longest pause between two walks, in milliseconds (each pause is drawn from 0 to it). */
  readonly pauseMs: number
}

export interface RaceOptions {
  /** The service processes, by base URL; writers and readers pick one per request. */
  readonly bases: ReadonlyArray<string>
  /** How long the writers write at least. */
  readonly seconds: number
  /**
   * The writers go on past `seconds` until this many changes were acknowledged, up to
   * `maxSeconds` in all, so that a slow machine still runs a race of some size.
   */
  readonly minChanges?: number
  readonly maxSeconds?: number
  readonly writers: number
  readonly readers: ReadonlyArray<RaceReader>
  /** A bound on each writer's saves, so that a fast machine still ends the loop by count. */
  readonly maxSavesPerWriter?: number
  /** The seed of the writers' and readers' choices. */
  readonly seed?: number
}

/** A version of a response, and when its save was sent and acknowledged (milliseconds since the race began). */
export interface Change {
  readonly surveyId: string
  readonly responseId: string
  readonly version: number
  readonly updatedAt: string
  readonly requestedAt: number
  readonly ackedAt: number
}

export interface Failure extends Change {
  readonly kind: "miss" | "late" | "lost"
  readonly reader: number
  /** The walk that moved the reader past the change: where it began and ended, when, and what it listed. */
  readonly walk?: string
}

export interface RaceReport {
  /** Acknowledged changes checked against every reader. */
  readonly changes: number
  readonly deletions: number
  readonly walks: number
  readonly pages: number
  readonly misses: ReadonlyArray<Failure>
  readonly late: ReadonlyArray<Failure>
  readonly lost: ReadonlyArray<Failure>
  readonly torn: number
  /** Writes answered neither 2xx nor 4xx (503s, lost connections): not counted as changes. */
  readonly unanswered: number
  /** From acknowledgement to first sighting, in milliseconds, over every (change, reader). */
  readonly lagP50: number
  readonly lagP99: number
  /** Milliseconds from the race's start to the acknowledgement of its first failing change, if any. */
  readonly firstFailureAt: number | undefined
}

const PageToken = Schema.parseJson(Schema.Struct({ respondentToken: Schema.String }))
const Started = Schema.parseJson(Schema.Struct({ responseId: Schema.String }))
const Listed = Schema.Struct({
  id: Schema.String,
  updatedAt: Schema.String,
  answers: Schema.Array(Schema.Struct({ fieldId: Schema.NullOr(Schema.String), values: Schema.Array(Schema.String) }))
})
const One = Schema.parseJson(Listed)
const Page = Schema.parseJson(Schema.Struct({ data: Schema.Array(Listed), nextCursor: Schema.NullOr(Schema.String) }))



interface Walk {
  readonly surveyId: string
  readonly from: string
  readonly startedAt: number
  endedAt: number
  /** The reader's position after the walk. */
  position: string
  /** The largest `updatedAt` listed for each response. */
  readonly listed: Map<string, string>
}

interface Sighting {
  /** The walk's number among the reader's walks. */
  readonly walk: number
  readonly responseId: string
  readonly updatedAt: string
  readonly version: number | undefined
  readonly at: number
}

const percentile = (values: ReadonlyArray<number>, p: number) => {
  if (values.length === 0) return 0
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0
}

/** The version `v<n>` that both answers of a listed response carry; undefined when they differ or are missing. */
const versionOf = (listed: typeof Listed.Type): number | undefined => {
  const values = QUESTIONS.map((q) => listed.answers.find((a) => a.fieldId === q)?.values[0])
  const [first, second] = values
  if (first === undefined || first !== second || !/^v\d+$/.test(first)) return undefined
  return Number(first.slice(1))
}

const describeWalk = (walk: Walk) =>
  `from ${walk.from} to ${walk.position}, ${walk.startedAt.toFixed(0)}–${walk.endedAt.toFixed(0)} ms: ${
    [...walk.listed].map(([id, at]) => `${at} ${id}`).sort().join("; ")
  }`

export const runSyncRace = async (options: RaceOptions): Promise<RaceReport> => {
  const started = performance.now()
  const elapsed = () => performance.now() - started
  const writeFor = options.seconds * 1000
  const writeAtMost = Math.max(writeFor, (options.maxSeconds ?? options.seconds) * 1000)
  const minChanges = options.minChanges ?? 0
  const maxSaves = options.maxSavesPerWriter ?? 100_000
  const editor = { authorization: `Bearer ${TOKENS.editor}` }
  const seed = options.seed ?? 1
  const base = (next: () => number) => options.bases[Math.floor(next() * options.bases.length)] ?? options.bases[0] ?? ""

  const changes: Array<Change> = []
  /** Each response's latest acknowledged change, and whether it was deleted. */
  const latest = new Map<string, Change>()
  /** When each deleted response's deletion was sent. */
  const deleted = new Map<string, number>()
  let deletions = 0
  let unanswered = 0
  let torn = 0
  let writing = true

  // One page token per survey: a survey page's token starts any number of responses.
  const tokens = new Map<string, string>()
  for (const surveyId of RACE_SURVEYS) {
    const res = await fetch(`${options.bases[0]}/s/${surveyId}`, { headers: { accept: "application/json" } })
    tokens.set(surveyId, Schema.decodeUnknownSync(PageToken)(await res.text()).respondentToken)
  }

  const save = (url: string, method: "POST" | "PATCH", surveyId: string, version: number, finished: boolean) =>
    fetch(url, {
      method,
      headers: { authorization: `Bearer ${tokens.get(surveyId) ?? ""}`, "content-type": "application/json" },
      body: JSON.stringify({ answers: QUESTIONS.map((questionId) => ({ questionId, values: [`v${version}`] })), finished })
    })

  /** The instant of the change just acknowledged: its writer is the response's only one. */
  const record = async (
    at: string,
    write: { readonly surveyId: string; readonly responseId: string; readonly version: number },
    requestedAt: number,
    ackedAt: number
  ) => {
    const res = await fetch(`${at}/api/v1/surveys/${write.surveyId}/responses/${write.responseId}`, { headers: editor })
    if (res.status !== 200) throw new Error(`reading back ${write.responseId}: ${res.status} ${await res.text()}`)
    const listed = Schema.decodeUnknownSync(One)(await res.text())
    if (versionOf(listed) !== write.version) torn++
    const change: Change = { ...write, updatedAt: listed.updatedAt, requestedAt, ackedAt }
    changes.push(change)
    latest.set(write.responseId, change)
  }

  const writer = async (index: number) => {
    const next = seededRandom(seed * 1000 + index)
    const open: Array<{ surveyId: string; responseId: string; version: number }> = []
    const done: Array<{ surveyId: string; responseId: string }> = []
    const goOn = () => {
      const t = elapsed()
      return t < writeAtMost && (t < writeFor || changes.length < minChanges)
    }
    for (let saves = 0; saves < maxSaves && goOn(); saves++) {
      const at = base(next)
      const roll = next()
      if (open.length === 0 || roll < 0.3) {
        const surveyId = RACE_SURVEYS[(index + saves) % RACE_SURVEYS.length] ?? RACE_SURVEYS[0]
        const requestedAt = elapsed()
        const res = await save(`${at}/respond/v1/responses`, "POST", surveyId, 0, false)
        const text = await res.text()
        if (res.status !== 201) {
          unanswered++
          continue
        }
        const responseId = Schema.decodeUnknownSync(Started)(text).responseId
        const write = { surveyId, responseId, version: 0 }
        open.push(write)
        await record(at, write, requestedAt, elapsed())
      } else if (roll < 0.88 || done.length === 0) {
        const i = Math.floor(next() * open.length)
        const target = open[i]
        if (target === undefined) continue
        const finished = roll >= 0.75
        const version = target.version + 1
        const requestedAt = elapsed()
        const res = await save(`${at}/respond/v1/responses/${target.responseId}`, "PATCH", target.surveyId, version, finished)
        await res.text()
        if (res.status !== 200) {
          // Not acknowledged: it may still have been stored, so the version number is used up.
          target.version = version
          unanswered++
          continue
        }
        const ackedAt = elapsed()
        target.version = version
        if (finished) {
          open.splice(i, 1)
          done.push(target)
        }
        await record(at, { ...target }, requestedAt, ackedAt)
      } else {
        const i = Math.floor(next() * done.length)
        const target = done[i]
        if (target === undefined) continue
        done.splice(i, 1)
        deleted.set(target.responseId, elapsed())
        deletions++
        const res = await fetch(`${at}/api/v1/surveys/${target.surveyId}/responses/${target.responseId}`, {
          method: "DELETE",
          headers: editor
        })
        await res.text()
        if (res.status !== 204) unanswered++
      }
    }
  }

  const walks: Array<Array<Walk>> = options.readers.map(() => [])
  const sightings: Array<Array<Sighting>> = options.readers.map(() => [])
  let pages = 0

  /** One walk of one survey from `from`: every page to the end. */
  const walk = async (reader: number, next: () => number, surveyId: string, from: string) => {
    const { limit } = options.readers[reader] ?? { limit: 10 }
    const record: Walk = { surveyId, from, startedAt: elapsed(), endedAt: 0, position: from, listed: new Map() }
    const number = walks[reader]?.length ?? 0
    let fresh = 0
    let cursor: string | null = null
    for (let page = 0; page < 100_000; page++) {
      const query = new URLSearchParams({ updatedAfter: from, limit: String(limit) })
      if (cursor !== null) query.set("cursor", cursor)
      const res = await fetch(`${base(next)}/api/v1/surveys/${surveyId}/responses?${query}`, { headers: editor })
      const text = await res.text()
      if (res.status !== 200) throw new Error(`walk of ${surveyId}: ${res.status} ${text}`)
      const body = Schema.decodeUnknownSync(Page)(text)
      const at = elapsed()
      pages++
      for (const listed of body.data) {
        const version = versionOf(listed)
        if (version === undefined) torn++
        sightings[reader]?.push({ walk: number, responseId: listed.id, updatedAt: listed.updatedAt, version, at })
        if (listed.updatedAt > (record.listed.get(listed.id) ?? "")) record.listed.set(listed.id, listed.updatedAt)
        if (listed.updatedAt > record.position) {
          record.position = listed.updatedAt
          fresh++
        }
      }
      cursor = body.nextCursor
      if (cursor === null) break
    }
    record.endedAt = elapsed()
    walks[reader]?.push(record)
    return { position: record.position, fresh }
  }

  const reader = async (index: number) => {
    const next = seededRandom(seed * 7919 + index)
    const positions = new Map<string, string>(RACE_SURVEYS.map((s) => [s, "2000-01-01T00:00:00.000Z"]))
    const pause = () => new Promise((resolve) => setTimeout(resolve, next() * (options.readers[index]?.pauseMs ?? 0)))
    for (let round = 0; writing && round < 1_000_000; round++) {
      const surveyId = RACE_SURVEYS[round % RACE_SURVEYS.length] ?? RACE_SURVEYS[0]
      const { position } = await walk(index, next, surveyId, positions.get(surveyId) ?? "")
      positions.set(surveyId, position)
      await pause()
    }
    // Caught up: a walk of each survey that brings nothing past its position.
    for (const surveyId of RACE_SURVEYS) {
      for (let round = 0; round < 1000; round++) {
        const { fresh, position } = await walk(index, next, surveyId, positions.get(surveyId) ?? "")
        positions.set(surveyId, position)
        if (fresh === 0) break
      }
    }
  }

  const writing$ = Promise.all(Array.from({ length: options.writers }, (_, i) => writer(i))).finally(() => {
    writing = false
  })
  await Promise.all([writing$, ...options.readers.map((_, i) => reader(i))])

  // The check, reader by reader.
  const misses: Array<Failure> = []
  const late: Array<Failure> = []
  const lost: Array<Failure> = []
  const lags: Array<number> = []
  const versions = new Map<string, Map<string, number>>()
  for (const change of changes) {
    const byInstant = versions.get(change.responseId) ?? new Map<string, number>()
    byInstant.set(change.updatedAt, change.version)
    versions.set(change.responseId, byInstant)
  }
  const failure = (kind: Failure["kind"], reader: number, change: Change, walk?: Walk): Failure => ({
    ...change,
    kind,
    reader,
    ...(walk === undefined ? {} : { walk: describeWalk(walk) })
  })
  options.readers.forEach((_, r) => {
    const seen = new Map<string, Array<Sighting>>()
    for (const sighting of sightings[r] ?? []) {
      const listed = seen.get(sighting.responseId) ?? []
      listed.push(sighting)
      seen.set(sighting.responseId, listed)
      // A listed instant that a writer recorded for another version: a torn read.
      const version = versions.get(sighting.responseId)?.get(sighting.updatedAt)
      if (version !== undefined && sighting.version !== undefined && version !== sighting.version) torn++
    }
    const readerWalks = walks[r] ?? []
    for (const change of changes) {
      const sightedAt = seen.get(change.responseId) ?? []
      const shown = sightedAt.find((s) => s.updatedAt >= change.updatedAt)
      if (shown !== undefined) lags.push(Math.max(0, shown.at - change.ackedAt))
      const deletedAt = deleted.get(change.responseId) ?? Number.POSITIVE_INFINITY
      const missed = readerWalks.find((w) =>
        w.surveyId === change.surveyId && w.startedAt >= change.ackedAt && w.from <= change.updatedAt &&
        w.position > change.updatedAt && (w.listed.get(change.responseId) ?? "") < change.updatedAt && w.endedAt < deletedAt
      )
      if (missed !== undefined) misses.push(failure("miss", r, change, missed))
      const exact = sightedAt.find((s) => s.updatedAt === change.updatedAt)
      if (exact !== undefined) {
        const passed = readerWalks.slice(0, exact.walk).find((w) => w.surveyId === change.surveyId && w.position > change.updatedAt)
        if (passed !== undefined) late.push(failure("late", r, change, passed))
      }
      if (latest.get(change.responseId) === change && !deleted.has(change.responseId) && shown === undefined) {
        lost.push(failure("lost", r, change))
      }
    }
  })

  const failures = [...misses, ...late, ...lost]
  return {
    changes: changes.length,
    deletions,
    walks: walks.reduce((n, w) => n + w.length, 0),
    pages,
    misses,
    late,
    lost,
    torn,
    unanswered,
    lagP50: percentile(lags, 50),
    lagP99: percentile(lags, 99),
    firstFailureAt: failures.length === 0 ? undefined : Math.min(...failures.map((f) => f.ackedAt))
  }
}
