/**
 * The wire form of a response's answers (api-v1 `Answer`), from stored answer rows and the
 * survey's questions as they are now. Plain functions with no imports, shared by the read path,
 * the writers that store each response's rendered answers (`responses.answers_json`, see
 * src/Responses/AnswerDocumentRepo.ts) and the benchmark scripts.
 *
 * Measured shortcut: answers become JSON text by concatenation, skipping the Schema encoding of
 * each answer and the `JSON.stringify` of the result. The text equals the declared schema's
 * encoding, checked by a property test against `assemble` (test/WireEncoding.test.ts).
 * Measurement: docs/performance.md#measured-shortcuts, "Pre-encoded bodies".
 */

/** A stored answer beside its question's current state (null type: deleted, a section, or unknown). */
export interface PlacedAnswer {
  readonly questionId: string
  readonly value: string
  /** Null when the question is gone, deleted, or not a question of this survey; "section" when it is one. */
  readonly type: string | null
  readonly position: number | null
}

const rank = (a: PlacedAnswer) =>
  a.type === null || a.type === "section" ? Number.POSITIVE_INFINITY : a.position ?? 0

/** Answers in question order; answers to deleted questions (and sections) last, by question id. */
export const answerOrder = (a: PlacedAnswer, b: PlacedAnswer): number => {
  const pa = rank(a)
  const pb = rank(b)
  return pa === pb ? (a.questionId < b.questionId ? -1 : a.questionId > b.questionId ? 1 : 0) : pa - pb
}

/** A response's answers in question order, by response id. */
export const answersByResponse = <A extends PlacedAnswer & { readonly responseId: string }>(
  answers: ReadonlyArray<A>
): Map<string, Array<A>> => {
  const byResponse = new Map<string, Array<A>>()
  for (const answer of answers) {
    const list = byResponse.get(answer.responseId)
    if (list === undefined) byResponse.set(answer.responseId, [answer])
    else list.push(answer)
  }
  for (const list of byResponse.values()) list.sort(answerOrder)
  return byResponse
}

/** The type the API shows: null for answers to deleted questions, sections or unknown ids. */
export const liveType = <T extends string>(type: T | "section" | null): T | null =>
  type === null || type === "section" ? null : type

/**
 * The JSON text of a response's `answers` array, answers already in order: byte for byte what
 * `JSON.stringify` writes for the schema's encoding of the same answers (test/WireEncoding.test.ts).
 * `valuesOf` gives an answer's values.
 */
export const answersJson = <A extends PlacedAnswer>(
  answers: ReadonlyArray<A>,
  valuesOf: (answer: A) => ReadonlyArray<string>
): string => {
  let out = "["
  for (let i = 0; i < answers.length; i++) {
    const a = answers[i] as A
    const type = liveType(a.type)
    if (i > 0) out += ","
    out += `{"fieldId":${type === null ? "null" : JSON.stringify(a.questionId)},"type":${
      type === null ? "null" : JSON.stringify(type)
    },"value":${JSON.stringify(a.value)},"values":${JSON.stringify(valuesOf(a))}}`
  }
  return out + "]"
}

/** A string as a JSON value, null as `null`. */
const nullable = (text: string | null) => (text === null ? "null" : JSON.stringify(text))

/**
 * The JSON text of one response on the wire, around its already rendered `answers` array: the
 * fields of api-v1 `Response` in the schema's order. Positional, for the list's single pass over
 * value rows.
 */
export const responseJson = (
  id: string,
  surveyId: string,
  externalUserId: string | null,
  completedAt: string | null,
  createdAt: string,
  updatedAt: string,
  answers: string
): string =>
  `{"id":${JSON.stringify(id)},"surveyId":${JSON.stringify(surveyId)},"externalUserId":${
    nullable(externalUserId)
  },"completed":${completedAt !== null},"completedAt":${nullable(completedAt)},"createdAt":${
    JSON.stringify(createdAt)
  },"updatedAt":${JSON.stringify(updatedAt)},"answers":${answers}}`
