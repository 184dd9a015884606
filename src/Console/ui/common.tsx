import { createContext, type ComponentChildren } from "preact"
import { useCallback, useContext, useEffect, useRef, useState } from "preact/hooks"
import { ApiError, type KeyInfo } from "./api.js"

/** The signed-in key and what it may do. The key itself stays in this object and sessionStorage. */
export interface Session {
  readonly key: string
  readonly info: KeyInfo
  readonly canWrite: boolean
  /** A key limited to some surveys: it cannot create surveys nor manage the workspace webhook. */
  readonly limited: boolean
}

export const SessionContext = createContext<Session | null>(null)

export const useSession = (): Session => {
  const session = useContext(SessionContext)
  if (session === null) throw new Error("the console is not signed in")
  return session
}

export type Loaded<T> =
  | { readonly state: "loading" }
  | { readonly state: "failed"; readonly error: unknown }
  | { readonly state: "ready"; readonly value: T }

/** Loads with `load` whenever `deps` change; `reload` loads again, keeping what is shown until the answer. */
export const useLoad = <T,>(load: () => Promise<T>, deps: ReadonlyArray<unknown>) => {
  const [loaded, setLoaded] = useState<Loaded<T>>({ state: "loading" })
  const generation = useRef(0)
  const run = useCallback(() => {
    const mine = ++generation.current
    return load().then(
      (value) => {
        if (mine === generation.current) setLoaded({ state: "ready", value })
      },
      (error: unknown) => {
        if (mine === generation.current) setLoaded({ state: "failed", error })
      }
    )
  }, deps)
  useEffect(() => {
    setLoaded({ state: "loading" })
    void run()
    return () => {
      generation.current++
    }
  }, [run])
  return { loaded, reload: run }
}

export const messageOf = (error: unknown): string =>
  error instanceof ApiError
    ? `${error.message} (${error.status} ${error.code})`
    : error instanceof Error
    ? error.message
    : "Something went wrong."

export const ErrorNote = ({ error }: { readonly error: unknown }) => (
  <p class="error" role="alert">{messageOf(error)}</p>
)

export const Notice = ({ children }: { readonly children: ComponentChildren }) => (
  <p class="notice" role="status">{children}</p>
)

/** What a load shows: a line while loading, the error, or the content. */
export const Show = <T,>(
  { loaded, children }: { readonly loaded: Loaded<T>; readonly children: (value: T) => ComponentChildren }
) =>
  loaded.state === "loading"
    ? <p class="muted" aria-live="polite">Loading…</p>
    : loaded.state === "failed"
    ? <ErrorNote error={loaded.error} />
    : <>{children(loaded.value)}</>

/** An instant as the API gives it, shown in UTC to the minute and second. */
export const when = (iso: string | null): string => {
  if (iso === null) return "—"
  const date = new Date(iso)
  return Number.isNaN(date.getTime()) ? iso : `${date.toISOString().slice(0, 19).replace("T", " ")} UTC`
}

/** A `datetime-local` input's value (read as UTC) to an ISO instant; undefined when empty. */
export const isoFromInput = (value: string): string | undefined => {
  if (value === "") return undefined
  const date = new Date(`${value}Z`)
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString()
}

export const formatNumber = (n: number, digits = 2): string =>
  Number.isInteger(n) ? n.toLocaleString("en-US") : n.toLocaleString("en-US", { maximumFractionDigits: digits })

export const percent = (rate: number): string => `${(rate * 100).toLocaleString("en-US", { maximumFractionDigits: 1 })} %`

/** A table that scrolls sideways on narrow screens, reachable by keyboard. */
export const TableWrap = ({ label, children }: { readonly label: string; readonly children: ComponentChildren }) => (
  <div class="table-wrap" tabIndex={0} role="region" aria-label={label}>{children}</div>
)

/** A button that asks once more before a destructive action. */
export const ConfirmButton = (
  { label, confirmLabel, onConfirm, disabled }: {
    readonly label: string
    readonly confirmLabel: string
    readonly onConfirm: () => void
    readonly disabled?: boolean
  }
) => {
  const [asking, setAsking] = useState(false)
  return asking
    ? (
      <span class="confirm">
        <button type="button" class="danger" onClick={() => { setAsking(false); onConfirm() }}>{confirmLabel}</button>
        <button type="button" onClick={() => setAsking(false)}>Cancel</button>
      </span>
    )
    : <button type="button" class="danger-outline" disabled={disabled ?? false} onClick={() => setAsking(true)}>{label}</button>
}

/** The cursors of the pages before the current one, and the current one's; null for the first page. */
export const useCursors = () => {
  const [cursors, setCursors] = useState<ReadonlyArray<string | null>>([null])
  return {
    cursor: cursors[cursors.length - 1] ?? null,
    first: cursors.length === 1,
    back: () => setCursors(cursors.slice(0, -1)),
    next: (cursor: string) => setCursors([...cursors, cursor]),
    reset: () => setCursors([null])
  }
}

/** Previous and next page of a cursor-paged list. */
export const Pager = ({ cursors, nextCursor }: { readonly cursors: ReturnType<typeof useCursors>; readonly nextCursor: string | null }) => (
  <div class="pager">
    <button type="button" disabled={cursors.first} onClick={cursors.back}>Previous page</button>
    <button type="button" disabled={nextCursor === null} onClick={() => nextCursor !== null && cursors.next(nextCursor)}>Next page</button>
  </div>
)
