import { ApiError } from "../api.js"

export interface Issue {
  readonly path: string
  readonly message: string
}

/** The issues of a 400 answer at `path` exactly. */
export const issuesAt = (error: unknown, path: string): ReadonlyArray<Issue> =>
  error instanceof ApiError ? error.issues.filter((i) => i.path === path) : []

/** The issues of a 400 answer at `path` or below it. */
export const issuesUnder = (error: unknown, path: string): ReadonlyArray<Issue> =>
  error instanceof ApiError ? error.issues.filter((i) => i.path === path || i.path.startsWith(`${path}.`)) : []

/** A field's issues, shown beside it. */
export const FieldError = ({ issues, id }: { readonly issues: ReadonlyArray<Issue>; readonly id?: string }) =>
  issues.length === 0 ? null : (
    <p class="field-error" id={id}>
      {issues.map((i) => i.message).join("; ")}
    </p>
  )
