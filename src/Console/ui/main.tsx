import { render } from "preact"
import { useEffect, useState } from "preact/hooks"
import { ApiError, call, KeyInfo } from "./api.js"
import { ErrorNote, type Session, SessionContext } from "./common.js"
import "./console.css"
import { Editor } from "./pages/Editor.js"
import { Responses } from "./pages/Responses.js"
import { Results } from "./pages/Results.js"
import { SurveyFrame } from "./pages/SurveyFrame.js"
import { Surveys } from "./pages/Surveys.js"
import { UsagePage } from "./pages/Usage.js"
import { Webhooks } from "./pages/Webhooks.js"

// The key lives in this tab's sessionStorage only: never in the URL, a cookie or a log. Closing
// the tab or signing out forgets it.
const STORAGE = "survey-console-key"

const storedKey = (): string | null => {
  try {
    return sessionStorage.getItem(STORAGE)
  } catch {
    return null
  }
}

const sessionFor = (key: string, info: KeyInfo): Session => ({
  key,
  info,
  canWrite: info.role !== "viewer",
  limited: info.surveyIds !== null
})

type Route =
  | { readonly page: "surveys" }
  | { readonly page: "usage" }
  | { readonly page: "webhooks" }
  | { readonly page: "survey"; readonly surveyId: string; readonly tab: "results" | "responses" | "edit" | "webhook" }

const parseRoute = (hash: string): Route => {
  const parts = hash.replace(/^#\/?/, "").split("/").map((p) => decodeURIComponent(p))
  if (parts[0] === "usage") return { page: "usage" }
  if (parts[0] === "webhooks") return { page: "webhooks" }
  if (parts[0] === "surveys" && parts[1] !== undefined && parts[1] !== "") {
    const tab = parts[2]
    return {
      page: "survey",
      surveyId: parts[1],
      tab: tab === "responses" || tab === "edit" || tab === "webhook" ? tab : "results"
    }
  }
  return { page: "surveys" }
}

const useRoute = () => {
  const [route, setRoute] = useState(() => parseRoute(location.hash))
  useEffect(() => {
    const onChange = () => setRoute(parseRoute(location.hash))
    addEventListener("hashchange", onChange)
    return () => removeEventListener("hashchange", onChange)
  }, [])
  return route
}

const SignIn = ({ onSignedIn }: { readonly onSignedIn: (key: string, info: KeyInfo) => void }) => {
  const [key, setKey] = useState("")
  const [error, setError] = useState<unknown>(null)
  const [busy, setBusy] = useState(false)
  const submit = async (event: Event) => {
    event.preventDefault()
    const trimmed = key.trim()
    if (trimmed === "") {
      setError(new Error("Paste an API key."))
      return
    }
    setBusy(true)
    setError(null)
    try {
      const { body } = await call(trimmed, "GET", "/key", KeyInfo)
      onSignedIn(trimmed, body)
    } catch (e) {
      setError(e)
    } finally {
      setBusy(false)
    }
  }
  return (
    <main id="main" class="signin">
      <h1>Survey Service console</h1>
      <p>
        Sign in with an API key of your workspace. It stays in this browser tab only, and is forgotten when you sign
        out or close the tab.
      </p>
      <form onSubmit={submit} class="stack">
        <label for="api-key">API key</label>
        <input
          id="api-key"
          type="password"
          autocomplete="off"
          spellcheck={false}
          value={key}
          onInput={(e) => setKey(e.currentTarget.value)}
          aria-describedby={error === null ? undefined : "signin-error"}
        />
        <button type="submit" class="primary" disabled={busy}>Sign in</button>
      </form>
      {error !== null && <div id="signin-error"><ErrorNote error={error} /></div>}
    </main>
  )
}

const Header = ({ session, route, onSignOut }: { readonly session: Session; readonly route: Route; readonly onSignOut: () => void }) => {
  const current = (page: Route["page"]) => (route.page === page || (page === "surveys" && route.page === "survey") ? "page" : undefined)
  return (
    <header class="top">
      <a class="skip" href="#main">Skip to content</a>
      <div class="brand">Survey Service</div>
      <nav aria-label="Console">
        <a href="#/surveys" aria-current={current("surveys")}>Surveys</a>
        {!session.limited && <a href="#/webhooks" aria-current={current("webhooks")}>Webhooks</a>}
        <a href="#/usage" aria-current={current("usage")}>Usage</a>
      </nav>
      <div class="who" aria-label="Signed in key">
        <span>Workspace <strong>{session.info.workspaceId}</strong></span>
        <span class={`role role-${session.info.role}`}>{session.info.role}</span>
        {session.info.surveyIds !== null && (
          <span class="muted">
            {session.info.surveyIds.length === 1 ? "limited to 1 survey" : `limited to ${session.info.surveyIds.length} surveys`}
          </span>
        )}
        {!session.canWrite && <span class="muted">read-only</span>}
        <button type="button" onClick={onSignOut}>Sign out</button>
      </div>
    </header>
  )
}

const Page = ({ route }: { readonly route: Route }) => {
  switch (route.page) {
    case "surveys":
      return <Surveys />
    case "usage":
      return <UsagePage />
    case "webhooks":
      return <Webhooks surveyId={null} />
    case "survey":
      return (
        <SurveyFrame surveyId={route.surveyId} tab={route.tab}>
          {route.tab === "results"
            ? <Results surveyId={route.surveyId} />
            : route.tab === "responses"
            ? <Responses surveyId={route.surveyId} />
            : route.tab === "edit"
            ? <Editor surveyId={route.surveyId} />
            : <Webhooks surveyId={route.surveyId} />}
        </SurveyFrame>
      )
  }
}

const App = () => {
  const route = useRoute()
  const [session, setSession] = useState<Session | null>(null)
  const [restoring, setRestoring] = useState(() => storedKey() !== null)
  const [restoreError, setRestoreError] = useState<unknown>(null)

  useEffect(() => {
    const key = storedKey()
    if (key === null) return
    call(key, "GET", "/key", KeyInfo).then(
      ({ body }) => setSession(sessionFor(key, body)),
      (error: unknown) => {
        // A key the service no longer accepts is forgotten; any other failure leaves it for a retry.
        if (error instanceof ApiError && error.status === 401) sessionStorage.removeItem(STORAGE)
        setRestoreError(error)
      }
    ).finally(() => setRestoring(false))
  }, [])

  const signedIn = (key: string, info: KeyInfo) => {
    sessionStorage.setItem(STORAGE, key)
    setRestoreError(null)
    setSession(sessionFor(key, info))
  }
  const signOut = () => {
    sessionStorage.removeItem(STORAGE)
    setSession(null)
    location.hash = ""
  }

  useEffect(() => {
    document.title = session === null ? "Sign in · Survey Service console" : `${titleOf(route)} · Survey Service console`
  }, [session, route])

  if (restoring) return <p class="muted">Loading…</p>
  if (session === null) {
    return (
      <>
        {restoreError !== null && <ErrorNote error={restoreError} />}
        <SignIn onSignedIn={signedIn} />
      </>
    )
  }
  return (
    <SessionContext.Provider value={session}>
      <Header session={session} route={route} onSignOut={signOut} />
      <main id="main" tabIndex={-1}>
        <Page route={route} />
      </main>
    </SessionContext.Provider>
  )
}

const titleOf = (route: Route): string => {
  switch (route.page) {
    case "surveys":
      return "Surveys"
    case "usage":
      return "Usage"
    case "webhooks":
      return "Webhooks"
    case "survey":
      return { results: "Results", responses: "Responses", edit: "Editor", webhook: "Webhook" }[route.tab]
  }
}

const root = document.getElementById("app")
if (root !== null) {
  root.textContent = ""
  render(<App />, root)
}
