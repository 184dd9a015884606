/**
 * The key lookup of every request: the key, its creator's membership and plan, the owner's plan
 * (decisions §3). Kept free of imports: the read benchmark's baseline runs the same statement.
 */
export const keyLookupSql = `SELECT k.id, k.workspace_id, k.created_by, k.survey_ids, m.role,
         op.api_access, cp.id AS plan_id, cp.burst_limit, cp.burst_window_minutes,
         cp.daily_limit, cp.monthly_limit
  FROM api_keys k
  JOIN workspaces w ON w.id = k.workspace_id
  JOIN accounts o ON o.id = w.owner_account_id
  JOIN plans op ON op.id = o.plan_id
  JOIN accounts c ON c.id = k.created_by
  JOIN plans cp ON cp.id = c.plan_id
  LEFT JOIN members m ON m.workspace_id = k.workspace_id AND m.account_id = k.created_by
  WHERE k.token_hash = ? AND k.revoked = 0`

/**
 * Moves with every write to the tables `keyLookupSql` reads (migration 0007): a lookup
 * remembered at one value is still what `keyLookupSql` would answer while it holds.
 */
export const accessGenerationSql = "SELECT value FROM access_generation WHERE id = 1"
