import { Database } from "bun:sqlite"
import { Data, Duration, Effect } from "effect"
import { randomBytes } from "node:crypto"
import { chmodSync, closeSync, existsSync, fsyncSync, linkSync, lstatSync, openSync, renameSync, rmSync, statSync, unlinkSync } from "node:fs"
import { basename, dirname, join } from "node:path"
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

/** The database a backup copies, opened read-only: the backup cannot change it, whatever the file's mode. */
export const openSource = (path: string): Database => new Database(path, { readonly: true })

/** Whether anything is at `path`, a symbolic link included (a dangling one too). */
const taken = (path: string): boolean => lstatSync(path, { throwIfNoEntry: false }) !== undefined

const fsyncPath = (path: string, flags: "r" | "r+") => {
  const fd = openSync(path, flags)
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

/**
 * Puts the finished copy at `to` without ever replacing what is there: a hard link fails when
 * anything exists at `to` (a symbolic link, dangling or not, included), so the copy appears whole
 * or not at all. Where the file system has no hard links, a rename after a last check.
 */
const moveExclusively = (from: string, to: string) => {
  try {
    linkSync(from, to)
    unlinkSync(from)
  } catch (error) {
    const code = error instanceof Error && "code" in error ? error.code : undefined
    if (code === "EEXIST") throw new BackupFailed({ message: `${to} already exists; a backup never overwrites a file` })
    if (code !== "EPERM" && code !== "ENOTSUP" && code !== "EOPNOTSUPP") throw error
    if (taken(to)) throw new BackupFailed({ message: `${to} already exists; a backup never overwrites a file` })
    renameSync(from, to)
  }
}

/**
 * `VACUUM INTO` the copy: one read transaction, so the copy is the database as one commit left it,
 * while servers keep writing (in WAL mode a reader neither waits for writers nor holds them up).
 * The source is opened read-only. The copy is written into a temporary file of the target's
 * directory, created exclusively with mode 0600 (it holds webhook secrets and the token signing
 * key), written to disk and checked with `PRAGMA integrity_check`, and only then put at `to`.
 */
const copy = (from: string, to: string, busyTimeoutMs: number): Copied => {
  const temporary = join(dirname(to), `.${basename(to)}.${randomBytes(6).toString("hex")}.partial`)
  closeSync(openSync(temporary, "wx", 0o600))
  try {
    chmodSync(temporary, 0o600)
    const source = openSource(from)
    try {
      source.exec(`PRAGMA busy_timeout = ${Math.max(0, Math.trunc(busyTimeoutMs))}`)
      source.query("VACUUM INTO ?").run(temporary)
    } finally {
      source.close()
    }
    fsyncPath(temporary, "r+")
    const copied = new Database(temporary, { readonly: true })
    try {
      const verdict = copied.query("PRAGMA integrity_check").values().map((row) => String(row[0]))
      if (verdict.length !== 1 || verdict[0] !== "ok") {
        throw new BackupFailed({ message: `the copy ${to} failed PRAGMA integrity_check: ${verdict.slice(0, 5).join("; ")}` })
      }
    } finally {
      copied.close()
    }
    moveExclusively(temporary, to)
    fsyncPath(dirname(to), "r")
  } finally {
    rmSync(temporary, { force: true })
  }
  return { from, to, bytes: statSync(to).size }
}

const reasonOf = (error: unknown): string => error instanceof Error ? error.message : String(error)

/**
 * A consistent copy of the SQLite database at `databasePath` to `target`, and of its quota file
 * to `target`-quota, each checked. Refuses a target that exists (a symbolic link, even a dangling
 * one, included); removes what it wrote when any step fails. The two files are copied one after
 * the other: each is consistent in itself, and the quota file holds only request counters, which
 * a restore may find a few requests apart.
 */
export const backupSqlite = Effect.fn("Backup.sqlite")(function*(databasePath: string, target: string, busyTimeoutMs: number) {
  const quotaSource = quotaFilePath(databasePath)
  const quotaTarget = quotaFilePath(target)
  if (!existsSync(databasePath)) return yield* new BackupFailed({ message: `no SQLite database at ${databasePath}` })
  for (const path of [target, quotaTarget]) {
    if (taken(path)) return yield* new BackupFailed({ message: `${path} already exists; a backup never overwrites a file` })
  }
  const withQuota = existsSync(quotaSource)
  const written: Array<string> = []
  const [took, copies] = yield* Effect.timed(Effect.try({
    try: () => {
      const copies = [copy(databasePath, target, busyTimeoutMs)]
      written.push(target)
      if (withQuota) copies.push(copy(quotaSource, quotaTarget, busyTimeoutMs))
      return copies
    },
    catch: (error) => {
      // Only what this backup put there: a file that was found in place stays as it was.
      for (const path of written) rmSync(path, { force: true })
      return error instanceof BackupFailed ? error : new BackupFailed({ message: `backup failed: ${reasonOf(error)}` })
    }
  }))
  return { copies, noQuotaFile: !withQuota, took } satisfies BackupReport
})
