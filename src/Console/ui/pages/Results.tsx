import { useEffect } from "preact/hooks"
import { Analytics, call, type Question, type QuestionAnalytics, QuestionList, typeLabels } from "../api.js"
import { BarChart, RangeChart, ShareBar } from "../Charts.js"
import { formatNumber, Notice, Show, useLoad, useSession } from "../common.js"
import { surveyPath } from "./SurveyFrame.js"

/** How often the results follow new responses while the page is open and visible. */
const REFRESH_MS = 15_000


const QuestionResult = ({ question, result }: { readonly question: Question; readonly result: QuestionAnalytics }) => {
  const answered = (
    <p class="muted">
      {formatNumber(result.respondentCount)} answered, {formatNumber(result.skippedCount)} skipped
    </p>
  )
  let chart = null
  if (question.type === "sort" && result.ranking !== null) {
    const ranked = [...result.ranking].sort((a, b) => (a.averageRank ?? Infinity) - (b.averageRank ?? Infinity))
    const places = Math.max(1, ranked.length)
    chart = (
      <BarChart
        title={`${question.label}: options by average rank, first is best`}
        valueHeading="Average rank"
        bars={ranked.map((r) => ({
          label: r.label,
          // The best rank (1) draws the longest bar.
          value: r.averageRank === null ? 0 : places + 1 - r.averageRank,
          text: r.averageRank === null ? "not ranked" : `rank ${formatNumber(r.averageRank)}`
        }))}
      />
    )
  } else if (question.type === "scale") {
    chart = (
      <>
        <BarChart title={`${question.label}: answers per value`} valueHeading="Answers" bars={result.options.map((o) => ({ label: o.label, value: o.count }))} />
        {result.numeric !== null && <RangeChart title={`${question.label}: distribution`} summary={result.numeric} />}
      </>
    )
  } else if (result.options.length > 0) {
    chart = <BarChart title={`${question.label}: answers per option`} valueHeading="Answers" bars={result.options.map((o) => ({ label: o.label, value: o.count }))} />
  } else if (result.numeric !== null) {
    chart = <RangeChart title={`${question.label}: distribution`} summary={result.numeric} />
  } else if (question.type === "textarea" || question.type === "email") {
    chart = <p class="big-number">{formatNumber(result.textAnswerCount)} <span class="muted">text answers</span></p>
  }
  return (
    <section class="card question-result" aria-labelledby={`result-${question.id}`}>
      <h3 id={`result-${question.id}`}>{question.label}</h3>
      <p class="muted">{typeLabels[question.type]}</p>
      {answered}
      {chart}
    </section>
  )
}

export const Results = ({ surveyId }: { readonly surveyId: string }) => {
  const { key } = useSession()
  const { loaded, reload } = useLoad(
    () =>
      Promise.all([
        call(key, "GET", `${surveyPath(surveyId)}/analytics`, Analytics),
        call(key, "GET", `${surveyPath(surveyId)}/questions`, QuestionList)
      ]).then(([analytics, questions]) => ({ analytics: analytics.body, questions: questions.body.data })),
    [key, surveyId]
  )
  useEffect(() => {
    const timer = setInterval(() => {
      if (document.visibilityState === "visible") void reload()
    }, REFRESH_MS)
    return () => clearInterval(timer)
  }, [reload])
  return (
    <section aria-labelledby="results-heading">
      <div class="row">
        <h2 id="results-heading">Results</h2>
        <button type="button" onClick={() => void reload()}>Refresh</button>
      </div>
      <Show loaded={loaded}>
        {({ analytics, questions }) => {
          const byId = new Map(questions.map((q) => [q.id, q]))
          return (
            <>
              {analytics.stale === true && (
                <Notice>The analytics are being rebuilt after a change to the questions: these numbers are from before it.</Notice>
              )}
              <div class="figures" aria-live="polite">
                <div class="figure"><span class="figure-value" data-testid="response-count">{formatNumber(analytics.responseCount)}</span> responses</div>
                <div class="figure"><span class="figure-value">{formatNumber(analytics.completedCount)}</span> completed</div>
                <div class="figure"><span class="figure-value">{formatNumber(analytics.incompleteCount)}</span> incomplete</div>
              </div>
              {analytics.completionRate === null
                ? <p class="muted">No responses yet.</p>
                : <ShareBar label="Completion rate" share={analytics.completionRate} />}
              {analytics.questions.map((result) => {
                const question = byId.get(result.id)
                return question === undefined ? null : <QuestionResult key={result.id} question={question} result={result} />
              })}
            </>
          )
        }}
      </Show>
    </section>
  )
}
