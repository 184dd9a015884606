// Kept free of imports: the read benchmark's baseline runs the same statements.

/**
 * The five counter tables of a survey in one statement, as value rows with typed column reads
 * instead of a Schema decode per row (docs/performance.md). Column 0 tells the table; the others
 * are that table's columns. `?1` is the survey id.
 *
 * Each column holds one type across the branches (text, integer or double, or NULL), and the
 * first branch names them with typed NULLs: PostgreSQL resolves a union's column types branch by
 * branch and refuses text beside an integer.
 */
export const storedCountersSql = `SELECT 0, CAST(NULL AS TEXT), signature, response_count, completed_count,
      CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE PRECISION), CAST(NULL AS DOUBLE PRECISION), CAST(NULL AS TEXT)
    FROM analytics_surveys WHERE survey_id = ?1
  UNION ALL SELECT 1, NULL, NULL, position, count, NULL, NULL, NULL, NULL
    FROM analytics_reach WHERE survey_id = ?1
  UNION ALL SELECT 2, question_id, NULL, answered, text_count, numeric_count, numeric_sum, numeric_sum_squares, NULL
    FROM analytics_questions WHERE survey_id = ?1
  UNION ALL SELECT 3, question_id, value, count, rank_sum, NULL, NULL, NULL, NULL
    FROM analytics_options WHERE survey_id = ?1
  UNION ALL SELECT 4, question_id, NULL, num, count, NULL, NULL, NULL, NULL
    FROM analytics_numbers WHERE survey_id = ?1`

/**
 * `storedCountersSql` and, with 5 in column 0, every question of the survey (deleted ones and
 * sections included) as id, type, position, deleted and (column 8) options: one statement, one moment.
 */
export const analyticsSnapshotSql = `${storedCountersSql}
  UNION ALL SELECT 5, id, type, position, deleted, NULL, NULL, NULL, options
    FROM questions WHERE survey_id = ?1`
