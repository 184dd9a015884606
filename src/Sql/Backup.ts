import { Database } from "bun:sqlite"
import { Data, Duration, Effect } from "effect"
import { closeSync, existsSync, fsyncSync, openSync, rmSync, statSync } from "node:fs"
import { quotaFilePath } from "../Quota/QuotaFileSql.js"

/** A backup that was refused or failed; nothing is left at the target. */
export class BackupFailed extends Data.TaggedError("BackupFailed")<{ readonly message: string }> {}

/** One file a backup wrote. */
export interface Copied {
  readonly from: string
  readonly to: string
  readonly bytes: number
}

/** What `backup` wrote, and how long it took. */
export interface BackupReport {
  readonly copies: ReadonlyArray<Copied>
  /** Set when the database has no quota file beside it (it was never served): only the database was copied. */
  readonly noQuotaFile: boolean
  readonly took: Duration.Duration
}

/**
 * `VACUUM INTO` the copy: one read transaction, so the copy is the database as one commit left it,
 * while servers keep writing (in WAL mode a reader neither waits for writers nor holds them up).
 * Written to disk before it is checked with `PRAGMA integrity_check`.
 */
const copy = (from: string, to: string, busyTimeoutMs: number): Copied => {
  const source = new Database(from, { readwrite: true, create: false })
  try {
    source.exec(`PRAGMA busy_timeout = ${Math.max(0, Math.trunc(busyTimeoutMs))}`)
    source.query("VACUUM INTO ?").run(to)
  } finally {
    source.close()
  }
  const fd = openSync(to, "r+")
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  const copied = new Database(to, { readonly: true })
  try {
    const verdict = copied.query("PRAGMA integrity_check").values().map((row) => String(row[0]))
    if (verdict.length !== 1 || verdict[0] !== "ok") {
      throw new BackupFailed({ message: `the copy ${to} failed PRAGMA integrity_check: ${verdict.slice(0, 5).join("; ")}` })
    }
  } finally {
    copied.close()
  }
  return { from, to, bytes: statSync(to).size }
}

const reasonOf = (error: unknown): string => error instanceof Error ? error.message : String(error)

/**
 * A consistent copy of the SQLite database at `databasePath` to `target`, and of its quota file
 * to `target`-quota, each checked. Refuses a target that exists; removes what it wrote when any
 * step fails. The two files are copied one after the other: each is consistent in itself, and
 * the quota file holds only request counters, which a restore may find a few requests apart.
 */
export const backupSqlite = Effect.fn("Backup.sqlite")(function*(databasePath: string, target: string, busyTimeoutMs: number) {
  const quotaSource = quotaFilePath(databasePath)
  const quotaTarget = quotaFilePath(target)
  if (!existsSync(databasePath)) return yield* new BackupFailed({ message: `no SQLite database at ${databasePath}` })
  for (const path of [target, quotaTarget]) {
    if (existsSync(path)) return yield* new BackupFailed({ message: `${path} already exists; a backup never overwrites a file` })
  }
  const withQuota = existsSync(quotaSource)
  const [took, copies] = yield* Effect.timed(Effect.try({
    try: () => [copy(databasePath, target, busyTimeoutMs), ...(withQuota ? [copy(quotaSource, quotaTarget, busyTimeoutMs)] : [])],
    catch: (error) => {
      for (const path of [target, quotaTarget]) rmSync(path, { force: true })
      return error instanceof BackupFailed ? error : new BackupFailed({ message: `backup failed: ${reasonOf(error)}` })
    }
  }))
  return { copies, noQuotaFile: !withQuota, took } satisfies BackupReport
})
