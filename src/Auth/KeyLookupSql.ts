import { column, rowShape } from "../Sql/Rows.js"

/** A row of `keyLookupSql`; `role` is null when the key's creator is no longer a member. */
export const KeyLookupColumns = rowShape({
  id: column.text("k.id"),
  workspaceId: column.text("k.workspace_id"),
  createdBy: column.text("k.created_by"),
  surveyIds: column.nullableText("k.survey_ids"),
  role: column.nullableOneOf("m.role", ["owner", "editor", "viewer"]),
  apiAccess: column.flag("op.api_access"),
  planId: column.text("cp.id AS plan_id"),
  burstLimit: column.num("cp.burst_limit"),
  burstWindowMinutes: column.num("cp.burst_window_minutes"),
  dailyLimit: column.num("cp.daily_limit"),
  monthlyLimit: column.num("cp.monthly_limit")
})

/**
 * The key lookup of every request: the key, its creator's membership and plan, the owner's plan
 * (decisions §3). Its only import is import-free: the read benchmark's baseline runs the same statement.
 */
export const keyLookupSql = `SELECT ${KeyLookupColumns.columns}
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

/** The row of `accessGenerationSql`. */
export const AccessGenerationColumns = rowShape({ value: column.num("value") })
