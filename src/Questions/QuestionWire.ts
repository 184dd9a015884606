import type { QuestionType, StoredQuestionType } from "../Domain/Question.js"
import type { ApiQuestionRow, QuestionRow } from "./QuestionRepo.js"

/**
 * The fields of a question as the API and the respondent page show them; for a question the API
 * shows (not a section), its wire form.
 */
export const questionWire = <T extends StoredQuestionType>(
  row: Pick<ApiQuestionRow, "id" | "label" | "required" | "allowMultiple" | "position" | "options"> & {
    readonly type: T
  }
) => ({
  id: row.id,
  type: row.type,
  label: row.label,
  required: row.required,
  allowMultiple: row.allowMultiple,
  order: row.position,
  options: row.options.map((o) => ({ value: o.value, label: o.label }))
})

/** A question the API shows: not a section, not deleted. */
export const isApiQuestion = (row: QuestionRow): row is QuestionRow & { readonly type: QuestionType } =>
  row.type !== "section" && !row.deleted
