/**
 * The read benchmark's deterministic dataset, written as fixture files (decisions §10) for
 * `survey-service import`. The same parameters always give the same bytes.
 *
 * Workspace `ws_bench`: `surveys` surveys of `responsesPerSurvey` responses, each survey with a
 * section and ten questions covering every question type. Workspace `ws_deep`: one survey with
 * enough responses for page 10,000 of the default page size, used to compare a deep keyset
 * cursor with page 1.
 */

export interface DatasetOptions {
  readonly surveys: number
  readonly responsesPerSurvey: number
  /** Responses of the deep survey; 0 leaves it out. */
  readonly deepResponses: number
}

export const BENCH_TOKEN = "sk_bench_editor_000000000000000000"
export const DEEP_TOKEN = "sk_bench_deep_00000000000000000000"
export const DEEP_SURVEY = "srv_deep"

/** Responses per fixture file: keeps each import's memory bounded. */
const CHUNK = 25_000

const mulberry32 = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const pad = (n: number, width: number) => String(n).padStart(width, "0")
export const surveyId = (s: number) => `srv_bench_${pad(s, 4)}`
const responseId = (s: number, r: number) => `rsp_${pad(s, 4)}_${pad(r, 7)}`
const iso = (millis: number) => new Date(millis).toISOString()
const BASE = Date.UTC(2026, 0, 1)

const options = (values: ReadonlyArray<string>) => values.map((v) => ({ value: v, label: v.toUpperCase() }))
const choices = ["red", "green", "blue", "amber", "violet"]
const ranked = ["price", "speed", "support", "design"]
const countries = ["DE", "FR", "US", "JP", "BR", "NG", "IN", "CA"]
const words = ["fast", "clear", "slow", "friendly", "helpful", "confusing", "great", "fine", "ok", "excellent"]

const questionsOf = (s: number) => {
  const q = (n: number) => `q_${pad(s, 4)}_${pad(n, 2)}`
  return [
    { id: q(0), type: "section", label: "About you", order: 1 },
    { id: q(1), type: "textarea", label: "What did you like?", order: 2 },
    { id: q(2), type: "email", label: "Your email", order: 3 },
    {
      id: q(3),
      type: "checkbox",
      label: "Colours you like",
      required: true,
      allowMultiple: true,
      order: 4,
      options: options(choices)
    },
    { id: q(4), type: "checkbox", label: "Favourite colour", order: 5, options: options(choices) },
    { id: q(5), type: "number", label: "How many times?", order: 6 },
    { id: q(6), type: "calendar", label: "When?", order: 7 },
    { id: q(7), type: "country", label: "Where?", order: 8 },
    { id: q(8), type: "heatmap", label: "Click where it hurts", order: 9, settings: { imageUrl: "/img/body.png" } },
    { id: q(9), type: "scale", label: "How likely?", order: 10, options: options(["1", "2", "3", "4", "5"]) },
    { id: q(10), type: "sort", label: "Rank these", order: 11, options: options(ranked) }
  ]
}

const pick = <A>(rand: () => number, list: ReadonlyArray<A>): A => list[Math.floor(rand() * list.length)] as A

const decimal = (x: number) => String(Number(x.toFixed(4)))

const answersOf = (rand: () => number, s: number, r: number) => {
  const q = (n: number) => `q_${pad(s, 4)}_${pad(n, 2)}`
  const all: Array<{ questionId: string; values: Array<string> }> = []
  const add = (n: number, values: Array<string>) => {
    // About one answer in seven is skipped.
    if (rand() >= 0.15) all.push({ questionId: q(n), values })
  }
  add(1, [`${pick(rand, words)} and ${pick(rand, words)}, response ${r}`])
  add(2, [`person${r}@example.com`])
  add(3, choices.filter(() => rand() < 0.4))
  add(4, [pick(rand, choices)])
  add(5, [String(Math.floor(rand() * 200) - 20)])
  add(6, [`2026-${pad(1 + Math.floor(rand() * 12), 2)}-${pad(1 + Math.floor(rand() * 28), 2)}`])
  add(7, [pick(rand, countries)])
  add(8, [`${decimal(rand())},${decimal(rand())}`])
  add(9, [String(1 + Math.floor(rand() * 5))])
  add(10, [...ranked].sort(() => rand() - 0.5).slice(0, 1 + Math.floor(rand() * 4)))
  return all.filter((a) => a.values.length > 0)
}

/**
 * The benchmark accounts' plan: API access and limits that minutes of load never reach, so that
 * every request is counted (and its RateLimit-* headers computed) but none is refused. With equal
 * limits the month is always the limit with the least remaining, so the headers do not depend on
 * when within the burst window each server started.
 */
export const BENCH_PLAN = {
  id: "bench",
  apiAccess: true,
  burstLimit: 1_000_000_000,
  burstWindowMinutes: 1,
  dailyLimit: 1_000_000_000,
  monthlyLimit: 1_000_000_000
}

const head = (opts: DatasetOptions) => ({
  plans: [BENCH_PLAN],
  accounts: [{ id: "acc_bench", planId: "bench" }, { id: "acc_deep", planId: "bench" }],
  workspaces: [{ id: "ws_bench", ownerAccountId: "acc_bench" }, { id: "ws_deep", ownerAccountId: "acc_deep" }],
  members: [
    { workspaceId: "ws_bench", accountId: "acc_bench", role: "owner" },
    { workspaceId: "ws_deep", accountId: "acc_deep", role: "owner" }
  ],
  apiKeys: [
    { token: BENCH_TOKEN, workspaceId: "ws_bench", createdBy: "acc_bench", surveyIds: null, revoked: false },
    { token: DEEP_TOKEN, workspaceId: "ws_deep", createdBy: "acc_deep", surveyIds: null, revoked: false }
  ],
  surveys: [
    ...Array.from({ length: opts.surveys }, (_, s) => ({
      id: surveyId(s),
      workspaceId: "ws_bench",
      title: `Customer survey ${s}`,
      description: s % 3 === 0 ? null : `Quarterly feedback, wave ${s}`,
      status: s % 7 === 0 ? "closed" : "published",
      createdAt: iso(BASE + s * 3_600_000),
      updatedAt: iso(BASE + 86_400_000 * 200 + s * 60_000),
      questions: questionsOf(s)
    })),
    ...(opts.deepResponses > 0
      ? [{
        id: DEEP_SURVEY,
        workspaceId: "ws_deep",
        title: "Deep survey",
        status: "published",
        createdAt: iso(BASE),
        updatedAt: iso(BASE),
        questions: [{ id: "q_deep", type: "scale", label: "Score", order: 1, options: options(["1", "2", "3"]) }]
      }]
      : [])
  ]
})

/** Response `r` of survey `s`, one second apart, every fifth left incomplete. */
function* responses(opts: DatasetOptions) {
  for (let s = 0; s < opts.surveys; s++) {
    const rand = mulberry32(1000 + s)
    for (let r = 0; r < opts.responsesPerSurvey; r++) {
      const created = BASE + 86_400_000 + s * 1000 + r * 60_000
      yield {
        id: responseId(s, r),
        surveyId: surveyId(s),
        externalUserId: r % 4 === 0 ? `user-${s}-${r}` : null,
        createdAt: iso(created),
        completedAt: r % 5 === 4 ? null : iso(created + 90_000 + Math.floor(rand() * 600_000)),
        answers: answersOf(rand, s, r)
      }
    }
  }
  for (let r = 0; r < opts.deepResponses; r++) {
    const created = BASE + r * 1000
    yield {
      id: `rsp_deep_${pad(r, 8)}`,
      surveyId: DEEP_SURVEY,
      createdAt: iso(created),
      completedAt: iso(created + 500),
      answers: [{ questionId: "q_deep", values: [String(1 + (r % 3))] }]
    }
  }
}

/** The position (sort key and id) of the deep survey's `n`th response, 1-based: page boundaries for cursors. */
export const deepPosition = (n: number) => ({ key: iso(BASE + (n - 1) * 1000), id: `rsp_deep_${pad(n - 1, 8)}` })

/** Writes the dataset as fixture files in `dir` and returns their paths, to be imported in order. */
export const writeDataset = async (dir: string, opts: DatasetOptions): Promise<ReadonlyArray<string>> => {
  const files: Array<string> = []
  const write = async (body: object) => {
    const path = `${dir}/fixture-${pad(files.length, 3)}.json`
    await Bun.write(path, JSON.stringify(body))
    files.push(path)
  }
  await write(head(opts))
  let chunk: Array<object> = []
  for (const response of responses(opts)) {
    chunk.push(response)
    if (chunk.length === CHUNK) {
      await write({ responses: chunk })
      chunk = []
    }
  }
  if (chunk.length > 0) await write({ responses: chunk })
  return files
}
