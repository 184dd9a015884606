import { useState } from "preact/hooks"
import { call, Survey, SurveyPage } from "../api.js"
import { ErrorNote, Pager, Show, TableWrap, useCursors, useLoad, useSession, when } from "../common.js"
import { FieldError, issuesAt } from "./Fields.js"

const PAGE_SIZE = 20

const CreateSurvey = () => {
  const { key } = useSession()
  const [title, setTitle] = useState("")
  const [description, setDescription] = useState("")
  const [error, setError] = useState<unknown>(null)
  const [busy, setBusy] = useState(false)
  const submit = async (event: Event) => {
    event.preventDefault()
    setBusy(true)
    setError(null)
    try {
      const { body } = await call(key, "POST", "/surveys", Survey, {
        body: { title, description: description.trim() === "" ? null : description }
      })
      location.hash = `#/surveys/${encodeURIComponent(body.id)}/edit`
    } catch (e) {
      setError(e)
    } finally {
      setBusy(false)
    }
  }
  return (
    <section aria-labelledby="create-heading" class="card">
      <h2 id="create-heading">New survey</h2>
      <form onSubmit={submit} class="stack">
        <label for="new-title">Title</label>
        <input id="new-title" value={title} onInput={(e) => setTitle(e.currentTarget.value)} required maxLength={500} />
        <FieldError issues={issuesAt(error, "title")} />
        <label for="new-description">Description (optional)</label>
        <textarea id="new-description" value={description} onInput={(e) => setDescription(e.currentTarget.value)} rows={2} />
        <FieldError issues={issuesAt(error, "description")} />
        <div><button type="submit" class="primary" disabled={busy}>Create survey</button></div>
      </form>
      {error !== null && <ErrorNote error={error} />}
    </section>
  )
}

export const Surveys = () => {
  const session = useSession()
  const cursors = useCursors()
  const { cursor } = cursors
  const { loaded } = useLoad(
    () =>
      call(session.key, "GET", "/surveys", SurveyPage, {
        query: { limit: String(PAGE_SIZE), cursor: cursor ?? undefined }
      }).then((a) => a.body),
    [session.key, cursor]
  )
  return (
    <>
      <h1>Surveys</h1>
      <Show loaded={loaded}>
        {(page) =>
          page.data.length === 0 && cursors.first
            ? <p>No surveys yet.</p>
            : (
              <>
                <TableWrap label="Surveys">
                  <table>
                    <caption class="sr-only">Surveys, newest change first</caption>
                    <thead>
                      <tr><th scope="col">Title</th><th scope="col">Status</th><th scope="col" class="num">Questions</th><th scope="col" class="num">Responses</th><th scope="col">Changed</th></tr>
                    </thead>
                    <tbody>
                      {page.data.map((s) => (
                        <tr key={s.id}>
                          <td><a href={`#/surveys/${encodeURIComponent(s.id)}/results`}>{s.title}</a></td>
                          <td><span class={`status status-${s.status}`}>{s.status}</span></td>
                          <td class="num">{s.questionCount}</td>
                          <td class="num">{s.responseCount}</td>
                          <td>{when(s.updatedAt)}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </TableWrap>
                <Pager cursors={cursors} nextCursor={page.nextCursor} />
              </>
            )}
      </Show>
      {session.canWrite && !session.limited && <CreateSurvey />}
    </>
  )
}
