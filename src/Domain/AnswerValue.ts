import type { StoredQuestionType } from "./Question.js"

/**
 * The stored `value` of an answer from its `values` (decisions §4): the single entry, or for
 * choice and ranking questions a JSON array string once more than one entry exists.
 */
export const storedValue = (type: StoredQuestionType | null, values: ReadonlyArray<string>): string =>
  (type === "checkbox" || type === "sort" || type === null) && values.length > 1
    ? JSON.stringify(values)
    : values[0] ?? ""
