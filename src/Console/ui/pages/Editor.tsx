import { useState } from "preact/hooks"
import { ApiError, call, EmbedSession, noBody, type Question, QuestionList, type QuestionType, questionTypes, Survey, typeLabels } from "../api.js"
import { array, type Decoder, str, struct } from "../decode.js"
import { ConfirmButton, ErrorNote, Notice, Show, useLoad, useSession } from "../common.js"
import { FieldError, issuesAt, issuesUnder } from "./Fields.js"
import { surveyPath, useSurveyReload } from "./SurveyFrame.js"


const withOptions = (type: QuestionType) => type === "checkbox" || type === "scale" || type === "sort"

interface OptionDraft {
  readonly value: string
  readonly label: string
}

interface QuestionDraft {
  /** Local key for rendering; the question's id once it has one. */
  readonly key: string
  readonly id: string | null
  readonly type: QuestionType
  readonly label: string
  readonly required: boolean
  readonly allowMultiple: boolean
  readonly options: ReadonlyArray<OptionDraft>
  readonly imageUrl: string
  /** The question's stored settings as the survey's definition gives them, sent back unchanged. */
  readonly settings: Readonly<Record<string, unknown>>
}

/** What the editor keeps from `GET …/definition`: each question's settings, and whether it is a section. */
const anySettings: Decoder<Readonly<Record<string, unknown>>> = (u) =>
  typeof u === "object" && u !== null && !Array.isArray(u) ? Object.fromEntries(Object.entries(u)) : {}
const Definition = struct({ questions: array(struct({ id: str, type: str, settings: anySettings })) })

let localKeys = 0
const draftOf = (settings: ReadonlyMap<string, Readonly<Record<string, unknown>>>) => (q: Question): QuestionDraft => ({
  key: q.id,
  id: q.id,
  type: q.type,
  label: q.label,
  required: q.required,
  allowMultiple: q.allowMultiple,
  options: q.options.map((o) => ({ value: o.value, label: o.label === o.value ? "" : o.label })),
  imageUrl: "",
  settings: settings.get(q.id) ?? {}
})

/** The settings a question is saved with: the stored ones, with a picture typed in the editor over them. */
const settingsOf = (q: QuestionDraft): Readonly<Record<string, unknown>> =>
  q.type === "heatmap" && q.imageUrl !== "" ? { ...q.settings, imageUrl: q.imageUrl } : q.settings

const inputOf = (q: QuestionDraft) => ({
  ...(q.id === null ? {} : { id: q.id }),
  type: q.type,
  label: q.label,
  required: q.required,
  ...(q.type === "checkbox" ? { allowMultiple: q.allowMultiple } : {}),
  ...(withOptions(q.type) ? { options: q.options.map((o) => (o.label === "" ? { value: o.value } : { value: o.value, label: o.label })) } : {}),
  ...(Object.keys(settingsOf(q)).length > 0 ? { settings: settingsOf(q) } : {})
})

interface Loaded {
  readonly survey: Survey
  readonly questions: ReadonlyArray<Question>
  readonly etag: string | null
  /** Each question's stored settings, by id. */
  readonly settings: ReadonlyMap<string, Readonly<Record<string, unknown>>>
  /** The survey has section headings, which this editor does not show: its questions are read only here. */
  readonly sections: boolean
}

const QuestionEditor = (
  { q, index, count, error, onChange, onMove, onRemove }: {
    readonly q: QuestionDraft
    readonly index: number
    readonly count: number
    readonly error: unknown
    readonly onChange: (q: QuestionDraft) => void
    readonly onMove: (by: -1 | 1) => void
    readonly onRemove: () => void
  }
) => {
  const at = `questions.${index}`
  const id = (name: string) => `q-${q.key}-${name}`
  const setOption = (i: number, option: OptionDraft) => onChange({ ...q, options: q.options.map((o, j) => (j === i ? option : o)) })
  const otherIssues = issuesUnder(error, at).filter((i) =>
    ![`${at}.label`, `${at}.type`].includes(i.path) && !i.path.startsWith(`${at}.options.`)
  )
  return (
    <li class="card question-edit">
      <fieldset>
        <legend>Question {index + 1}{q.id === null ? " (new)" : ""}</legend>
        <div class="grid2">
          <div>
            <label for={id("type")}>Type</label>
            <select id={id("type")} value={q.type} onChange={(e) => {
              const type = questionTypes.find((t) => t === e.currentTarget.value) ?? q.type
              onChange({ ...q, type })
            }}>
              {questionTypes.map((t) => <option value={t}>{typeLabels[t]}</option>)}
            </select>
            <FieldError issues={issuesAt(error, `${at}.type`)} />
          </div>
          <div>
            <label for={id("label")}>Question text</label>
            <input id={id("label")} value={q.label} onInput={(e) => onChange({ ...q, label: e.currentTarget.value })} />
            <FieldError issues={issuesAt(error, `${at}.label`)} />
          </div>
        </div>
        <div class="checks">
          <label><input type="checkbox" checked={q.required} onChange={(e) => onChange({ ...q, required: e.currentTarget.checked })} /> Required</label>
          {q.type === "checkbox" && (
            <label><input type="checkbox" checked={q.allowMultiple} onChange={(e) => onChange({ ...q, allowMultiple: e.currentTarget.checked })} /> Several answers</label>
          )}
        </div>
        {q.type === "heatmap" && (
          <div>
            <label for={id("image")}>Picture URL (https; leave empty to keep the current one)</label>
            <input id={id("image")} type="url" value={q.imageUrl} onInput={(e) => onChange({ ...q, imageUrl: e.currentTarget.value })} />
          </div>
        )}
        {withOptions(q.type) && (
          <div class="options">
            <p class="options-title">Options{q.type === "scale" ? " (whole numbers)" : ""}</p>
            <ol>
              {q.options.map((o, i) => (
                <li key={i} class="option-row">
                  <label for={id(`ov${i}`)} class="sr-only">Option {i + 1} value</label>
                  <input id={id(`ov${i}`)} placeholder="Value" value={o.value} onInput={(e) => setOption(i, { ...o, value: e.currentTarget.value })} />
                  <label for={id(`ol${i}`)} class="sr-only">Option {i + 1} label</label>
                  <input id={id(`ol${i}`)} placeholder="Label (optional)" value={o.label} onInput={(e) => setOption(i, { ...o, label: e.currentTarget.value })} />
                  <button type="button" aria-label={`Remove option ${i + 1}`} onClick={() => onChange({ ...q, options: q.options.filter((_, j) => j !== i) })}>Remove</button>
                  <FieldError issues={issuesUnder(error, `${at}.options.${i}`)} />
                </li>
              ))}
            </ol>
            <FieldError issues={issuesAt(error, `${at}.options`)} />
            <button type="button" onClick={() => onChange({ ...q, options: [...q.options, { value: "", label: "" }] })}>Add option</button>
          </div>
        )}
        <FieldError issues={otherIssues} />
        <div class="question-actions">
          <button type="button" disabled={index === 0} onClick={() => onMove(-1)} aria-label={`Move up, question ${index + 1}`}>Move up</button>
          <button type="button" disabled={index === count - 1} onClick={() => onMove(1)} aria-label={`Move down, question ${index + 1}`}>Move down</button>
          <button type="button" class="danger-outline" onClick={onRemove} aria-label={`Remove question ${index + 1}`}>Remove question</button>
        </div>
      </fieldset>
    </li>
  )
}

const ReadOnlyQuestions = ({ questions }: { readonly questions: ReadonlyArray<Question> }) => (
  <ol class="question-list">
    {questions.map((q) => (
      <li key={q.id} class="card">
        <strong>{q.label}</strong> <span class="muted">{typeLabels[q.type]}{q.required ? ", required" : ""}</span>
        {q.options.length > 0 && <ul>{q.options.map((o) => <li>{o.label}</li>)}</ul>}
      </li>
    ))}
  </ol>
)

const Sharing = ({ survey }: { readonly survey: Survey }) => {
  const session = useSession()
  const [externalUserId, setExternalUserId] = useState("")
  const [embed, setEmbed] = useState<EmbedSession | null>(null)
  const [error, setError] = useState<unknown>(null)
  const [preview, setPreview] = useState(false)
  const publicUrl = `${location.origin}/s/${encodeURIComponent(survey.id)}`
  const create = async (event: Event) => {
    event.preventDefault()
    setError(null)
    try {
      setEmbed((await call(session.key, "POST", `${surveyPath(survey.id)}/embed-sessions`, EmbedSession, { body: { externalUserId } })).body)
    } catch (e) {
      setError(e)
    }
  }
  return (
    <section class="card" aria-labelledby="share-heading">
      <h2 id="share-heading">Public page and embedding</h2>
      <p>Public page: <a href={publicUrl} target="_blank" rel="noopener noreferrer">{publicUrl}</a></p>
      {survey.status === "published"
        ? <button type="button" aria-expanded={preview} onClick={() => setPreview(!preview)}>{preview ? "Hide preview" : "Preview the public page"}</button>
        : <p class="muted">The public page answers once the survey is published.</p>}
      {preview && <iframe class="preview" src={`/s/${encodeURIComponent(survey.id)}`} title={`Preview of ${survey.title}`} />}
      {session.canWrite && (
        <form class="stack" onSubmit={create}>
          <label for="embed-user">External user id for an embed link</label>
          <input id="embed-user" value={externalUserId} onInput={(e) => setExternalUserId(e.currentTarget.value)} />
          <FieldError issues={issuesAt(error, "externalUserId")} />
          <div><button type="submit">Create embed link</button></div>
        </form>
      )}
      {error !== null && <ErrorNote error={error} />}
      {embed !== null && (
        <p>
          Embed link (works once, until {embed.expiresAt}): <code class="secret">{embed.embedUrl}</code>
        </p>
      )}
    </section>
  )
}
type EmbedSession = ReturnType<typeof EmbedSession>

const EditorForm = ({ initial, onReload }: { readonly initial: Loaded; readonly onReload: () => void }) => {
  const session = useSession()
  const reloadFrame = useSurveyReload()
  const [survey, setSurvey] = useState(initial.survey)
  const [etag, setEtag] = useState(initial.etag)
  const [title, setTitle] = useState(initial.survey.title)
  const [description, setDescription] = useState(initial.survey.description ?? "")
  const [questions, setQuestions] = useState<ReadonlyArray<QuestionDraft>>(initial.questions.map(draftOf(initial.settings)))
  const [error, setError] = useState<unknown>(null)
  const [conflict, setConflict] = useState(false)
  const [note, setNote] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)
  const path = surveyPath(survey.id)

  const run = async (what: () => Promise<void>, done: string) => {
    setBusy(true)
    setError(null)
    setNote(null)
    try {
      await what()
      setNote(done)
      reloadFrame()
    } catch (e) {
      if (e instanceof ApiError && e.status === 412) setConflict(true)
      else setError(e)
    } finally {
      setBusy(false)
    }
  }

  const saveDetails = (event: Event) => {
    event.preventDefault()
    void run(async () => {
      const answer = await call(session.key, "PATCH", path, Survey, {
        ifMatch: etag,
        body: { title, description: description.trim() === "" ? null : description }
      })
      setSurvey(answer.body)
      setEtag(answer.etag)
    }, "Title and description saved.")
  }
  const saveQuestions = () =>
    run(async () => {
      const answer = await call(session.key, "PUT", `${path}/questions`, QuestionList, {
        ifMatch: etag,
        body: { questions: questions.map(inputOf) }
      })
      setQuestions(answer.body.data.map(draftOf(initial.settings)))
      setEtag(answer.etag)
    }, "Questions saved.")
  const move = (to: "publish" | "close") =>
    run(async () => {
      const answer = await call(session.key, "POST", `${path}/${to}`, Survey, { ifMatch: etag })
      setSurvey(answer.body)
      setEtag(answer.etag)
    }, to === "publish" ? "The survey is published." : "The survey is closed.")
  const trash = () =>
    run(async () => {
      await call(session.key, "DELETE", path, noBody, { ifMatch: etag })
      location.hash = "#/surveys"
    }, "The survey is in the trash.")

  const update = (i: number, q: QuestionDraft) => setQuestions(questions.map((x, j) => (j === i ? q : x)))
  const moveQuestion = (i: number, by: -1 | 1) => {
    const next = [...questions]
    const [taken] = next.splice(i, 1)
    if (taken !== undefined) next.splice(i + by, 0, taken)
    setQuestions(next)
  }
  const topIssues = error instanceof ApiError ? error.issues.filter((i) => i.path === "" || i.path === "questions") : []

  return (
    <>
      {conflict && (
        <div class="conflict" role="alert">
          <p><strong>Someone else changed this survey</strong> since you opened it. Nothing was saved. Reload to see their change, then make yours again.</p>
          <button type="button" class="primary" onClick={onReload}>Reload the survey</button>
        </div>
      )}
      {error !== null && <ErrorNote error={error} />}
      <FieldError issues={topIssues} />
      {note !== null && <Notice>{note}</Notice>}
      <section class="card" aria-labelledby="details-heading">
        <h2 id="details-heading">Title and description</h2>
        <form class="stack" onSubmit={saveDetails}>
          <label for="survey-title">Title</label>
          <input id="survey-title" value={title} onInput={(e) => setTitle(e.currentTarget.value)} aria-describedby="survey-title-error" />
          <FieldError id="survey-title-error" issues={issuesAt(error, "title")} />
          <label for="survey-description">Description</label>
          <textarea id="survey-description" rows={3} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
          <FieldError issues={issuesAt(error, "description")} />
          <div><button type="submit" class="primary" disabled={busy}>Save title and description</button></div>
        </form>
      </section>
      <section aria-labelledby="questions-heading">
        <h2 id="questions-heading">Questions</h2>
        <ol class="question-list">
          {questions.map((q, i) => (
            <QuestionEditor
              key={q.key}
              q={q}
              index={i}
              count={questions.length}
              error={error}
              onChange={(next) => update(i, next)}
              onMove={(by) => moveQuestion(i, by)}
              onRemove={() => setQuestions(questions.filter((_, j) => j !== i))}
            />
          ))}
        </ol>
        <div class="row-actions">
          <button type="button" onClick={() => setQuestions([...questions, {
            key: `new-${++localKeys}`,
            id: null,
            type: "textarea",
            label: "",
            required: false,
            allowMultiple: false,
            options: [],
            imageUrl: "",
            settings: {}
          }])}>
            Add question
          </button>
          <button type="button" class="primary" disabled={busy} onClick={() => void saveQuestions()}>Save questions</button>
        </div>
      </section>
      <section class="card" aria-labelledby="status-heading">
        <h2 id="status-heading">Status</h2>
        <p>This survey is <span class={`status status-${survey.status}`}>{survey.status}</span>.</p>
        <div class="row-actions">
          {survey.status !== "published" && <button type="button" class="primary" disabled={busy} onClick={() => void move("publish")}>Publish</button>}
          {survey.status === "published" && <button type="button" disabled={busy} onClick={() => void move("close")}>Close</button>}
          <ConfirmButton label="Move to trash" confirmLabel="Trash this survey" disabled={busy} onConfirm={() => void trash()} />
        </div>
      </section>
      <Sharing survey={survey} />
    </>
  )
}

export const Editor = ({ surveyId }: { readonly surveyId: string }) => {
  const session = useSession()
  const [generation, setGeneration] = useState(0)
  const { loaded } = useLoad(async (): Promise<Loaded> => {
    const [survey, questions, definition] = await Promise.all([
      call(session.key, "GET", surveyPath(surveyId), Survey),
      call(session.key, "GET", `${surveyPath(surveyId)}/questions`, QuestionList),
      call(session.key, "GET", `${surveyPath(surveyId)}/definition`, Definition)
    ])
    return {
      survey: survey.body,
      questions: questions.body.data,
      etag: questions.etag ?? survey.etag,
      settings: new Map(definition.body.questions.map((q) => [q.id, q.settings])),
      sections: definition.body.questions.some((q) => q.type === "section")
    }
  }, [session.key, surveyId, generation])
  return (
    <Show loaded={loaded}>
      {(value) =>
        session.canWrite && !value.sections
          ? <EditorForm key={`${generation}`} initial={value} onReload={() => setGeneration(generation + 1)} />
          : (
            <>
              <Notice>
                {session.canWrite
                  ? "This survey has section headings, which the console's editor does not show yet: edit it over the API (GET …/definition, then PUT …/questions), so that nothing is lost."
                  : "This key reads only: the survey cannot be changed with it."}
              </Notice>
              <h2>Questions</h2>
              <ReadOnlyQuestions questions={value.questions} />
              <Sharing survey={value.survey} />
            </>
          )}
    </Show>
  )
}
