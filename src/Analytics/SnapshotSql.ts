/**
 * Measured shortcut: every stored counter of a survey's analytics in one `UNION ALL` statement,
 * skipping a statement per kind of counter. Rows are read by position, as the union's rows have
 * no one shape, by the names declared below, so that the statement and its reads cannot drift
 * apart (test/TypedReads.test.ts). No imports, as the read benchmark's baseline runs the same
 * text. Measurement: docs/performance.md#measured-shortcuts, "Analytics in one statement".
 */

/**
 * One branch of the union below: the table it reads and what each of the union's nine columns
 * holds for it. Column 0 is the branch's `kind`, which tells a row's table; the others name a
 * column of the table or hold NULL (null). The statement is built from these lists and the
 * service reads each cell by the name it has here (src/Analytics/AggregateRepo.ts), so the two
 * cannot drift apart.
 */
export interface SnapshotBranch {
  readonly kind: number
  readonly from: string
  readonly columns: readonly [
    "kind",
    string | null,
    string | null,
    string | null,
    string | null,
    string | null,
    string | null,
    string | null,
    string | null
  ]
}

/** The survey's totals and layout signature. */
export const surveyBranch = {
  kind: 0,
  from: "analytics_surveys",
  columns: ["kind", null, "signature", "response_count", "completed_count", null, null, null, null]
} as const satisfies SnapshotBranch
export const reachBranch = {
  kind: 1,
  from: "analytics_reach",
  columns: ["kind", null, null, "position", "count", null, null, null, null]
} as const satisfies SnapshotBranch
export const questionCountersBranch = {
  kind: 2,
  from: "analytics_questions",
  columns: [
    "kind",
    "question_id",
    null,
    "answered",
    "text_count",
    "numeric_count",
    "numeric_sum",
    "numeric_sum_squares",
    null
  ]
} as const satisfies SnapshotBranch
export const optionsBranch = {
  kind: 3,
  from: "analytics_options",
  columns: ["kind", "question_id", "value", "count", "rank_sum", null, null, null, null]
} as const satisfies SnapshotBranch
export const numbersBranch = {
  kind: 4,
  from: "analytics_numbers",
  columns: ["kind", "question_id", null, "num", "count", null, null, null, null]
} as const satisfies SnapshotBranch
/** Every question of the survey, deleted ones and sections included. */
export const questionsBranch = {
  kind: 5,
  from: "questions",
  columns: ["kind", "id", "type", "position", "deleted", null, null, null, "options"]
} as const satisfies SnapshotBranch

/** Whether a rebuild of the survey's counters is under way (src/Analytics/RebuildRepo.ts). */
export const rebuildBranch = {
  kind: 6,
  from: "analytics_rebuilds",
  columns: ["kind", null, null, "active", null, null, null, null, null]
} as const satisfies SnapshotBranch

/**
 * Each column holds one type across the branches (text, integer or double, or NULL), and the
 * first branch names them with typed NULLs: PostgreSQL resolves a union's column types branch by
 * branch and refuses text beside an integer.
 */
const columnTypes = ["INTEGER", "TEXT", "TEXT", "BIGINT", "BIGINT", "BIGINT", "DOUBLE PRECISION", "DOUBLE PRECISION", "TEXT"]

const union = (branches: ReadonlyArray<SnapshotBranch>) =>
  branches.map((branch, b) =>
    `SELECT ${
      branch.columns.map((name, i) =>
        i === 0 ? String(branch.kind) : name ?? (b === 0 ? `CAST(NULL AS ${columnTypes[i]})` : "NULL")
      ).join(", ")
    }\n    FROM ${branch.from} WHERE survey_id = ?1`
  ).join("\n  UNION ALL ")

/**
 * The five counter tables of a survey in one statement. `?1` is the survey id.
 */
export const storedCountersSql = union([surveyBranch, reachBranch, questionCountersBranch, optionsBranch, numbersBranch])

/**
 * `storedCountersSql`, every question of the survey (`questionsBranch`) and whether its counters
 * are being rebuilt (`rebuildBranch`): one statement, one moment.
 */
export const analyticsSnapshotSql = union([
  surveyBranch,
  reachBranch,
  questionCountersBranch,
  optionsBranch,
  numbersBranch,
  questionsBranch,
  rebuildBranch
])
