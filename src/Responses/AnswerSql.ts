import { StoredQuestionType } from "../Domain/Question.js"
import { placeholders } from "../Sql/Reader.js"
import { column, rowShape, type RowOf } from "../Sql/Rows.js"

/**
 * An answer row beside its question as it is now in the response's survey: the one way answers
 * are read for the wire (the responses list and `GET /responses/{id}`, and the stored renderings
 * of AnswerDocumentRepo). `values` stays the stored JSON text until it is written out.
 */
export const AnswerColumns = rowShape({
  responseId: column.text("a.response_id"),
  questionId: column.text("a.question_id"),
  value: column.text("a.value"),
  values: column.text("a.\"values\""),
  /** Null when the question is gone, deleted, or not a question of this survey. */
  type: column.nullableOneOf("CASE WHEN q.deleted = 0 THEN q.type END AS type", StoredQuestionType.literals),
  position: column.nullableNum("q.position")
})
export type AnswerRow = RowOf<typeof AnswerColumns.fields>

/** The answers of some responses, up to the list of their ids (`IN …`). */
export const answersOfResponsesIn = `SELECT ${AnswerColumns.columns}
   FROM answers a
   JOIN responses r ON r.id = a.response_id
   LEFT JOIN questions q ON q.id = a.question_id AND q.survey_id = r.survey_id
   WHERE a.response_id IN`

/** The answers of `count` responses, whose ids are the parameters (`?` placeholders). */
export const answersOfResponses = (count: number): string => `${answersOfResponsesIn} ${placeholders(count)}`
