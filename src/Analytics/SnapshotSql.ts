// Kept free of imports: the read benchmark's baseline runs the same statements.

/**
 * The five counter tables of a survey in one statement, as value rows with typed column reads
 * instead of a Schema decode per row (docs/performance.md). Column 0 tells the table; the others
 * are that table's columns. `?1` is the survey id.
 */
export const storedCountersSql = `SELECT 0, NULL, NULL, response_count, completed_count, signature, NULL, NULL
    FROM analytics_surveys WHERE survey_id = ?1
  UNION ALL SELECT 1, NULL, NULL, position, count, NULL, NULL, NULL
    FROM analytics_reach WHERE survey_id = ?1
  UNION ALL SELECT 2, question_id, NULL, answered, text_count, numeric_count, numeric_sum, numeric_sum_squares
    FROM analytics_questions WHERE survey_id = ?1
  UNION ALL SELECT 3, question_id, value, count, rank_sum, NULL, NULL, NULL
    FROM analytics_options WHERE survey_id = ?1
  UNION ALL SELECT 4, question_id, NULL, num, count, NULL, NULL, NULL
    FROM analytics_numbers WHERE survey_id = ?1`

/**
 * `storedCountersSql` and, with 5 in column 0, every question of the survey (deleted ones and
 * sections included) as id, type, position, deleted, options: one statement, one moment.
 */
export const analyticsSnapshotSql = `${storedCountersSql}
  UNION ALL SELECT 5, id, type, position, deleted, options, NULL, NULL
    FROM questions WHERE survey_id = ?1`
