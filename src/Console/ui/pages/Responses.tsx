import { useState } from "preact/hooks"
import { ApiError, apiUrl, call, noBody, QuestionList, ResponseItem, ResponsePage } from "../api.js"
import { ConfirmButton, ErrorNote, isoFromInput, Notice, Pager, Show, TableWrap, useCursors, useLoad, useSession, when } from "../common.js"
import { surveyPath } from "./SurveyFrame.js"

interface Filters {
  readonly status: "all" | "completed" | "incomplete"
  readonly createdAfter: string
  readonly updatedAfter: string
  readonly limit: string
}

const initial: Filters = { status: "all", createdAfter: "", updatedAfter: "", limit: "25" }

const query = (f: Filters) => ({
  status: f.status,
  createdAfter: isoFromInput(f.createdAfter),
  updatedAfter: isoFromInput(f.updatedAfter)
})

const OneResponse = (
  { surveyId, responseId, labels, onDeleted, onClose }: {
    readonly surveyId: string
    readonly responseId: string
    readonly labels: ReadonlyMap<string, string>
    readonly onDeleted: () => void
    readonly onClose: () => void
  }
) => {
  const session = useSession()
  const path = `${surveyPath(surveyId)}/responses/${encodeURIComponent(responseId)}`
  const { loaded } = useLoad(() => call(session.key, "GET", path, ResponseItem).then((a) => a.body), [session.key, path])
  const [error, setError] = useState<unknown>(null)
  const remove = async () => {
    try {
      await call(session.key, "DELETE", path, noBody)
      onDeleted()
    } catch (e) {
      setError(e)
    }
  }
  return (
    <section class="card" aria-labelledby="response-heading">
      <div class="row">
        <h3 id="response-heading">Response {responseId}</h3>
        <button type="button" onClick={onClose}>Close</button>
      </div>
      <Show loaded={loaded}>
        {(r) => (
          <>
            <dl class="facts">
              <div><dt>Status</dt><dd>{r.completed ? `completed ${when(r.completedAt)}` : "incomplete"}</dd></div>
              <div><dt>External user</dt><dd>{r.externalUserId ?? "—"}</dd></div>
              <div><dt>Created</dt><dd>{when(r.createdAt)}</dd></div>
              <div><dt>Changed</dt><dd>{when(r.updatedAt)}</dd></div>
            </dl>
            {r.answers.length === 0 ? <p>No answers.</p> : (
              <dl class="answers">
                {r.answers.map((a, i) => (
                  <div key={i}>
                    <dt>{a.fieldId === null ? "A deleted question" : labels.get(a.fieldId) ?? a.fieldId}</dt>
                    <dd>{a.values.length > 1 ? a.values.join(", ") : a.value}</dd>
                  </div>
                ))}
              </dl>
            )}
            {session.canWrite && <ConfirmButton label="Delete response" confirmLabel="Delete it for good" onConfirm={() => void remove()} />}
            {error !== null && <ErrorNote error={error} />}
          </>
        )}
      </Show>
    </section>
  )
}

export const Responses = ({ surveyId }: { readonly surveyId: string }) => {
  const { key } = useSession()
  const [draft, setDraft] = useState<Filters>(initial)
  const [filters, setFilters] = useState<Filters>(initial)
  const cursors = useCursors()
  const [open, setOpen] = useState<string | null>(null)
  const [note, setNote] = useState<string | null>(null)
  const [downloadError, setDownloadError] = useState<unknown>(null)
  const { cursor } = cursors
  const { loaded, reload } = useLoad(
    () =>
      Promise.all([
        call(key, "GET", `${surveyPath(surveyId)}/responses`, ResponsePage, {
          query: { ...query(filters), limit: filters.limit, cursor: cursor ?? undefined }
        }),
        call(key, "GET", `${surveyPath(surveyId)}/questions`, QuestionList)
      ]).then(([page, questions]) => ({ page: page.body, labels: new Map(questions.body.data.map((q) => [q.id, q.label])) })),
    [key, surveyId, filters, cursor]
  )

  const apply = (event: Event) => {
    event.preventDefault()
    cursors.reset()
    setFilters(draft)
  }

  const download = async () => {
    setDownloadError(null)
    try {
      const response = await fetch(apiUrl(`${surveyPath(surveyId)}/responses.csv`, query(filters)), {
        headers: { authorization: `Bearer ${key}` },
        credentials: "omit",
        cache: "no-store"
      })
      if (!response.ok) throw new ApiError(response.status, "csv_failed", `The CSV download answered ${response.status}.`, [])
      const url = URL.createObjectURL(await response.blob())
      const link = document.createElement("a")
      link.href = url
      link.download = `${surveyId}-responses.csv`
      document.body.append(link)
      link.click()
      link.remove()
      setTimeout(() => URL.revokeObjectURL(url), 60_000)
    } catch (e) {
      setDownloadError(e)
    }
  }

  return (
    <section aria-labelledby="responses-heading">
      <h2 id="responses-heading">Responses</h2>
      <form class="filters" onSubmit={apply}>
        <div>
          <label for="f-status">Status</label>
          <select id="f-status" value={draft.status} onChange={(e) => {
            const v = e.currentTarget.value
            setDraft({ ...draft, status: v === "completed" || v === "incomplete" ? v : "all" })
          }}>
            <option value="all">All</option>
            <option value="completed">Completed</option>
            <option value="incomplete">Incomplete</option>
          </select>
        </div>
        <div>
          <label for="f-created">Created at or after (UTC)</label>
          <input id="f-created" type="datetime-local" step={1} value={draft.createdAfter} onInput={(e) => setDraft({ ...draft, createdAfter: e.currentTarget.value })} />
        </div>
        <div>
          <label for="f-updated">Changed at or after (UTC)</label>
          <input id="f-updated" type="datetime-local" step={1} value={draft.updatedAfter} onInput={(e) => setDraft({ ...draft, updatedAfter: e.currentTarget.value })} />
        </div>
        <div>
          <label for="f-limit">Per page</label>
          <select id="f-limit" value={draft.limit} onChange={(e) => setDraft({ ...draft, limit: e.currentTarget.value })}>
            {["10", "25", "50", "100"].map((n) => <option value={n}>{n}</option>)}
          </select>
        </div>
        <div class="filter-actions">
          <button type="submit" class="primary">Apply filters</button>
          <button type="button" onClick={() => void download()}>Download CSV</button>
        </div>
      </form>
      {downloadError !== null && <ErrorNote error={downloadError} />}
      {note !== null && <Notice>{note}</Notice>}
      {open !== null && loaded.state === "ready" && (
        <OneResponse
          surveyId={surveyId}
          responseId={open}
          labels={loaded.value.labels}
          onClose={() => setOpen(null)}
          onDeleted={() => {
            setNote(`Response ${open} was deleted.`)
            setOpen(null)
            void reload()
          }}
        />
      )}
      <Show loaded={loaded}>
        {({ page }) => (
          <>
            {page.data.length === 0 ? <p>No responses match.</p> : (
              <TableWrap label="Responses">
                <table>
                  <thead>
                    <tr><th scope="col">Response</th><th scope="col">Status</th><th scope="col">External user</th><th scope="col">Created</th><th scope="col">Changed</th></tr>
                  </thead>
                  <tbody>
                    {page.data.map((r) => (
                      <tr key={r.id}>
                        <td><button type="button" class="link" onClick={() => setOpen(r.id)}>{r.id}</button></td>
                        <td>{r.completed ? "completed" : "incomplete"}</td>
                        <td>{r.externalUserId ?? "—"}</td>
                        <td>{when(r.createdAt)}</td>
                        <td>{when(r.updatedAt)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </TableWrap>
            )}
            <Pager cursors={cursors} nextCursor={page.nextCursor} />
          </>
        )}
      </Show>
    </section>
  )
}
