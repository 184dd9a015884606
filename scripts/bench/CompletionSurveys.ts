/**
 * The surveys that the completion benchmarks (scripts/bench/scale.ts, scripts/bench/completions.ts)
 * load: published surveys of one free-text question, beside the read dataset. The first takes the
 * one-survey cells, all of them the cells spread over surveys.
 */

export const SPREAD = 20

export const completionSurvey = (n: number) => n === 1 ? "srv_scale_completions" : `srv_scale_completions_${n}`
export const completionQuestion = (n: number) => n === 1 ? "q_scale_text" : `q_scale_text_${n}`

/** An import file (`survey-service import`) of the `SPREAD` surveys, in workspace `ws_bench`. */
export const completionFixture = {
  surveys: Array.from({ length: SPREAD }, (_, i) => ({
    id: completionSurvey(i + 1),
    workspaceId: "ws_bench",
    title: "Completions",
    status: "published",
    createdAt: "2026-01-01T00:00:00.000Z",
    updatedAt: "2026-01-01T00:00:00.000Z",
    questions: [{ id: completionQuestion(i + 1), type: "textarea", label: "Say", order: 1 }]
  }))
}

/** A respondent token for survey `n` from the survey page (JSON form) of the server at `url`. */
export const respondentToken = async (url: string, n: number) => {
  const page = await fetch(`${url}/s/${completionSurvey(n)}`, { headers: { accept: "application/json" } })
  const body: unknown = await page.json()
  const token = typeof body === "object" && body !== null && "respondentToken" in body && typeof body.respondentToken === "string"
    ? body.respondentToken
    : ""
  if (token === "") throw new Error(`no respondent token from ${url}`)
  return token
}

/** The completing save of survey `n`: one answer, finished. */
export const completionBody = (n: number) =>
  JSON.stringify({ answers: [{ questionId: completionQuestion(n), values: ["hello"] }], finished: true })

/**
 * wrk's Lua script: completions with `tokens[i]` to survey i + 1, the surveys taken in turn by
 * each request; `after` (Lua lines, such as a `done` function) follows.
 */
export const completionScript = (tokens: ReadonlyArray<string>, after: ReadonlyArray<string> = []) =>
  [
    `local tokens = { ${tokens.map((t) => JSON.stringify(t)).join(", ")} }`,
    `local bodies = { ${tokens.map((_, i) => `'${completionBody(i + 1)}'`).join(", ")} }`,
    "local i = 0",
    "request = function()",
    "  i = i % #tokens + 1",
    `  return wrk.format("POST", nil, { ["Authorization"] = "Bearer " .. tokens[i], ["Content-Type"] = "application/json" }, bodies[i])`,
    "end",
    ...after
  ].join("\n")
