import { type ComponentChildren, createContext } from "preact"
import { useContext } from "preact/hooks"
import { call, Survey } from "../api.js"
import { Show, useLoad, useSession } from "../common.js"

export const SurveyReload = createContext<() => void>(() => undefined)
export const useSurveyReload = () => useContext(SurveyReload)

export const surveyPath = (surveyId: string) => `/surveys/${encodeURIComponent(surveyId)}`

const tabs = [
  { tab: "results", label: "Results" },
  { tab: "responses", label: "Responses" },
  { tab: "edit", label: "Editor" },
  { tab: "webhook", label: "Webhook" }
] as const

/** A survey's heading and its tabs around one of its pages. */
export const SurveyFrame = (
  { surveyId, tab, children }: { readonly surveyId: string; readonly tab: string; readonly children: ComponentChildren }
) => {
  const { key } = useSession()
  const { loaded, reload } = useLoad(() => call(key, "GET", surveyPath(surveyId), Survey).then((a) => a.body), [key, surveyId])
  return (
    <>
      <p class="crumbs"><a href="#/surveys">Surveys</a></p>
      <Show loaded={loaded}>
        {(survey) => (
          <div class="survey-head">
            <h1>{survey.title}</h1>
            <p>
              <span class={`status status-${survey.status}`}>{survey.status}</span>{" "}
              <span class="muted">{survey.id}</span>
            </p>
          </div>
        )}
      </Show>
      <nav class="tabs" aria-label="Survey">
        {tabs.map((t) => (
          <a href={`#/surveys/${encodeURIComponent(surveyId)}/${t.tab}`} aria-current={t.tab === tab ? "page" : undefined}>{t.label}</a>
        ))}
      </nav>
      {loaded.state !== "failed" && <SurveyReload.Provider value={() => void reload()}>{children}</SurveyReload.Provider>}
    </>
  )
}
