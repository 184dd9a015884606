import { useState } from "preact/hooks"
import { call, DeliveryLog, noBody, eventTypes, Recovered, Redelivered, SecretRotated, TestResult, WebhookRegistered, type WebhookSettings, WebhookSettings as Settings } from "../api.js"
import { ConfirmButton, ErrorNote, isoFromInput, Notice, Show, TableWrap, useLoad, useSession, when } from "../common.js"
import { FieldError, issuesAt, issuesUnder } from "./Fields.js"
import { surveyPath } from "./SurveyFrame.js"

const defaultEvents: ReadonlyArray<string> = ["response.completed", "survey.published", "survey.closed"]

/** A secret shown once, with a button that copies it. */
const OnceSecret = ({ secret, onDismiss }: { readonly secret: string; readonly onDismiss: () => void }) => {
  const [copied, setCopied] = useState<string | null>(null)
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(secret)
      setCopied("Copied.")
    } catch {
      setCopied("Copying is not allowed here: select the secret and copy it.")
    }
  }
  return (
    <div class="secret-box" role="region" aria-label="New signing secret">
      <p><strong>The new signing secret.</strong> It is shown this once: store it with your receiver now.</p>
      <code class="secret" data-testid="signing-secret">{secret}</code>
      <div class="row-actions">
        <button type="button" class="primary" onClick={() => void copy()}>Copy secret</button>
        <button type="button" onClick={onDismiss}>I stored it</button>
      </div>
      {copied !== null && <p role="status">{copied}</p>}
    </div>
  )
}

const SettingsForm = (
  { base, current, onRegistered }: {
    readonly base: string
    readonly current: WebhookSettings
    readonly onRegistered: (secret: string) => void
  }
) => {
  const { key } = useSession()
  const [targetUrl, setTargetUrl] = useState(current.targetUrl ?? "")
  const [events, setEvents] = useState<ReadonlyArray<string>>(current.events.length > 0 ? current.events : defaultEvents)
  const [rate, setRate] = useState(current.maxAttemptsPerSecond === null ? "" : String(current.maxAttemptsPerSecond))
  const [error, setError] = useState<unknown>(null)
  const [busy, setBusy] = useState(false)
  const submit = async (event: Event) => {
    event.preventDefault()
    setBusy(true)
    setError(null)
    try {
      const answer = await call(key, "PUT", base, WebhookRegistered, {
        body: { targetUrl, events, maxAttemptsPerSecond: rate.trim() === "" ? null : Number(rate) }
      })
      onRegistered(answer.body.signingSecret)
    } catch (e) {
      setError(e)
    } finally {
      setBusy(false)
    }
  }
  return (
    <form class="stack" onSubmit={submit}>
      <label for="wh-url">Target URL</label>
      <input id="wh-url" type="url" value={targetUrl} onInput={(e) => setTargetUrl(e.currentTarget.value)} placeholder="https://example.com/hooks/surveys" />
      <FieldError issues={issuesAt(error, "targetUrl")} />
      <fieldset>
        <legend>Events</legend>
        {eventTypes.map((type) => (
          <label class="check" key={type}>
            <input
              type="checkbox"
              checked={events.includes(type)}
              onChange={(e) => setEvents(e.currentTarget.checked ? [...events, type] : events.filter((t) => t !== type))}
            />{" "}
            {type}
          </label>
        ))}
      </fieldset>
      <FieldError issues={issuesUnder(error, "events")} />
      <label for="wh-rate">Delivery rate: attempts per second at most (empty: no limit)</label>
      <input id="wh-rate" type="number" min={1} max={1000} step={1} value={rate} onInput={(e) => setRate(e.currentTarget.value)} />
      <FieldError issues={issuesAt(error, "maxAttemptsPerSecond")} />
      <p class="muted">Saving registers the webhook (again) with a new signing secret.</p>
      <div><button type="submit" class="primary" disabled={busy}>Save webhook</button></div>
      {error !== null && <ErrorNote error={error} />}
    </form>
  )
}

const Deliveries = ({ base, canWrite }: { readonly base: string; readonly canWrite: boolean }) => {
  const { key } = useSession()
  const { loaded, reload } = useLoad(() => call(key, "GET", `${base}/deliveries`, DeliveryLog, { query: { limit: "50" } }).then((a) => a.body.data), [key, base])
  const [note, setNote] = useState<string | null>(null)
  const [error, setError] = useState<unknown>(null)
  const redeliver = async (eventId: string) => {
    setError(null)
    try {
      const { body } = await call(key, "POST", `${base}/events/${encodeURIComponent(eventId)}/redeliver`, Redelivered)
      setNote(body.queued ? `Event ${eventId} is queued for delivery again.` : `Event ${eventId} was already waiting for delivery.`)
      void reload()
    } catch (e) {
      setError(e)
    }
  }
  return (
    <section aria-labelledby="log-heading">
      <div class="row">
        <h3 id="log-heading">Delivery log</h3>
        <button type="button" onClick={() => void reload()}>Refresh log</button>
      </div>
      {note !== null && <Notice>{note}</Notice>}
      {error !== null && <ErrorNote error={error} />}
      <Show loaded={loaded}>
        {(attempts) =>
          attempts.length === 0 ? <p>No delivery attempts yet.</p> : (
            <TableWrap label="Delivery log">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Attempted</th><th scope="col">Event</th><th scope="col">Result</th><th scope="col">Error</th>
                    {canWrite && <th scope="col"><span class="sr-only">Actions</span></th>}
                  </tr>
                </thead>
                <tbody>
                  {attempts.map((a) => (
                    <tr key={a.id} class={a.ok ? "" : "failed"}>
                      <td>{when(a.attemptedAt)}</td>
                      <td>{a.eventType}<br /><span class="muted small">{a.eventId}</span></td>
                      <td>{a.ok ? "Delivered" : "Failed"} {a.responseStatus === null ? "" : `(${a.responseStatus})`}</td>
                      <td>{a.error ?? ""}</td>
                      {canWrite && (
                        <td><button type="button" onClick={() => void redeliver(a.eventId)} aria-label={`Redeliver event ${a.eventId}`}>Redeliver</button></td>
                      )}
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
          )}
      </Show>
    </section>
  )
}

const Recover = ({ base }: { readonly base: string }) => {
  const { key } = useSession()
  const [since, setSince] = useState("")
  const [until, setUntil] = useState("")
  const [note, setNote] = useState<string | null>(null)
  const [error, setError] = useState<unknown>(null)
  const submit = async (event: Event) => {
    event.preventDefault()
    setError(null)
    setNote(null)
    try {
      const untilIso = isoFromInput(until)
      const { body } = await call(key, "POST", `${base}/recover`, Recovered, {
        body: { since: isoFromInput(since) ?? since, ...(untilIso === undefined ? {} : { until: untilIso }) }
      })
      setNote(body.queued === 1 ? "1 delivery queued." : `${body.queued} deliveries queued.`)
    } catch (e) {
      setError(e)
    }
  }
  return (
    <form class="filters" onSubmit={submit} aria-labelledby="recover-heading">
      <h3 id="recover-heading" class="full">Recover a window</h3>
      <p class="muted full">Sends again every event of the window that never arrived (at most 30 days back).</p>
      <div>
        <label for="rec-since">Since (UTC)</label>
        <input id="rec-since" type="datetime-local" step={1} value={since} onInput={(e) => setSince(e.currentTarget.value)} />
        <FieldError issues={issuesAt(error, "since")} />
      </div>
      <div>
        <label for="rec-until">Until (UTC, empty: now)</label>
        <input id="rec-until" type="datetime-local" step={1} value={until} onInput={(e) => setUntil(e.currentTarget.value)} />
        <FieldError issues={issuesAt(error, "until")} />
      </div>
      <div class="filter-actions"><button type="submit">Recover</button></div>
      {note !== null && <div class="full"><Notice>{note}</Notice></div>}
      {error !== null && <div class="full"><ErrorNote error={error} /></div>}
    </form>
  )
}

/** The workspace webhook (`surveyId` null) or one survey's. */
export const Webhooks = ({ surveyId }: { readonly surveyId: string | null }) => {
  const session = useSession()
  const base = surveyId === null ? "/webhooks" : `${surveyPath(surveyId)}/webhook`
  const { loaded, reload } = useLoad(() => call(session.key, "GET", base, Settings).then((a) => a.body), [session.key, base])
  const [secret, setSecret] = useState<string | null>(null)
  const [note, setNote] = useState<string | null>(null)
  const [error, setError] = useState<unknown>(null)
  const [logGeneration, setLogGeneration] = useState(0)

  const act = async (what: () => Promise<string>) => {
    setError(null)
    setNote(null)
    try {
      setNote(await what())
      void reload()
      setLogGeneration((g) => g + 1)
    } catch (e) {
      setError(e)
    }
  }
  const rotate = () =>
    act(async () => {
      const { body } = await call(session.key, "POST", `${base}/secret/rotate`, SecretRotated, { body: {} })
      setSecret(body.secret)
      return `The secret was rotated; the replaced one still signs deliveries until ${when(body.previousSecretExpiresAt)}.`
    })
  const enable = () =>
    act(async () => {
      await call(session.key, "POST", `${base}/enable`, Settings)
      return "The webhook is enabled again, with its secret, events and rate. Deliveries that ended while it was off are not sent by this: recover their window below."
    })
  const remove = () =>
    act(async () => {
      await call(session.key, "DELETE", base, noBody)
      return "The webhook is removed."
    })
  const test = () =>
    act(async () => {
      const { body } = await call(session.key, "POST", `${base}/test`, TestResult)
      return body.delivered ? "The test event was delivered." : "The test event was not delivered: see the log."
    })

  const heading = surveyId === null ? "Workspace webhook" : "This survey's webhook"
  return (
    <section aria-labelledby="webhook-heading">
      {surveyId === null ? <h1 id="webhook-heading">{heading}</h1> : <h2 id="webhook-heading">{heading}</h2>}
      {surveyId === null && <p class="muted">Receives the events of every survey of the workspace that has no webhook of its own.</p>}
      {secret !== null && <OnceSecret secret={secret} onDismiss={() => setSecret(null)} />}
      {note !== null && <Notice>{note}</Notice>}
      {error !== null && <ErrorNote error={error} />}
      <Show loaded={loaded}>
        {(settings) => (
          <>
            <dl class="facts">
              <div><dt>State</dt><dd>{settings.targetUrl === null ? "not set up" : settings.enabled ? "enabled" : `disabled (${settings.disabledReason ?? "unknown"})`}</dd></div>
              <div><dt>Target URL</dt><dd>{settings.targetUrl ?? "—"}</dd></div>
              <div><dt>Events</dt><dd>{settings.events.length === 0 ? "—" : settings.events.join(", ")}</dd></div>
              <div><dt>Delivery rate</dt><dd>{settings.maxAttemptsPerSecond === null ? "no limit" : `${settings.maxAttemptsPerSecond} attempts a second at most`}</dd></div>
              {settings.previousSecretExpiresAt !== null && (
                <div><dt>Replaced secret honoured until</dt><dd>{when(settings.previousSecretExpiresAt)}</dd></div>
              )}
            </dl>
            {session.canWrite && (
              <>
                <div class="card">
                  <h3>{settings.targetUrl === null ? "Set up" : "Change"}</h3>
                  <SettingsForm
                    key={`${settings.targetUrl ?? ""}|${settings.events.join(",")}|${settings.maxAttemptsPerSecond ?? ""}`}
                    base={base}
                    current={settings}
                    onRegistered={(s) => {
                      setSecret(s)
                      setNote("The webhook is saved.")
                      void reload()
                      setLogGeneration((g) => g + 1)
                    }}
                  />
                </div>
                {settings.targetUrl !== null && (
                  <div class="row-actions">
                    {!settings.enabled && <button type="button" class="primary" onClick={() => void enable()}>Enable again</button>}
                    {settings.enabled && <button type="button" onClick={() => void rotate()}>Rotate secret</button>}
                    {settings.enabled && <button type="button" onClick={() => void test()}>Send a test event</button>}
                    <ConfirmButton label="Remove webhook" confirmLabel="Remove it" onConfirm={() => void remove()} />
                  </div>
                )}
              </>
            )}
            <Deliveries key={logGeneration} base={base} canWrite={session.canWrite} />
            {session.canWrite && settings.targetUrl !== null && <Recover base={base} />}
          </>
        )}
      </Show>
    </section>
  )
}
