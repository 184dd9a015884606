/**
 * The read benchmark's dataset in a throwaway PostgreSQL cluster (test/support/PostgresCluster.ts):
 * imported once with `survey-service import` into a database kept as the template, from which each
 * start of the servers gets two fresh copies (the service's and the baseline's: both count requests,
 * and both must start from the same counts). `pg_stat_statements` is loaded, so that the benchmark
 * can tell how many statements each request costs, and which.
 */
import { spawnSync } from "node:child_process"
import { existsSync, readdirSync, readFileSync, renameSync } from "node:fs"
import { join } from "node:path"
import * as Pg from "pg"
import { type PostgresCluster, startPostgres } from "../../test/support/PostgresCluster.js"

export interface PgDatabases {
  readonly cluster: PostgresCluster
  /** The URL of database `name` in the cluster. */
  readonly urlOf: (name: string) => string
  /** Drops `names` and makes each a fresh copy of the imported dataset. */
  readonly copies: (names: ReadonlyArray<string>) => Promise<void>
  /** The statements run in database `name` since the last `resetStatements`: calls in all, and the most frequent texts. */
  readonly statements: (name: string) => Promise<{ readonly calls: number; readonly top: ReadonlyArray<string> }>
  readonly resetStatements: () => Promise<void>
  readonly stop: () => void
}

const TEMPLATE = "bench_dataset"

const withClient = async <A>(url: string, use: (client: Pg.Client) => Promise<A>): Promise<A> => {
  const client = new Pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await use(client)
  } finally {
    await client.end()
  }
}

/** The PostgreSQL client programs beside the server's (test/support/PostgresCluster.ts picks the same). */
const clientProgram = (name: string) => {
  const root = "/usr/lib/postgresql"
  const versions = existsSync(root) ? readdirSync(root).filter((v) => /^\d+$/.test(v)) : []
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0] ?? "15"
  return process.env.PG_BIN === undefined ? join(root, newest, "bin", name) : join(process.env.PG_BIN, name)
}

const program = (name: string, args: ReadonlyArray<string>) => {
  const result = spawnSync(clientProgram(name), [...args], { encoding: "utf8" })
  if (result.status !== 0) throw new Error(`${name} failed: ${result.stderr}`)
}

/**
 * Starts the cluster and fills the dataset: restored from `dump` when that file exists, else
 * written by `files` (then imported, migrated and `analytics rebuild` with `cli`, the service's
 * CLI) and dumped to `dump` for the next run.
 */
export const preparePostgres = async (
  dump: string,
  files: () => Promise<ReadonlyArray<string>>,
  cli: (args: Array<string>) => void
): Promise<PgDatabases> => {
  const cluster = await startPostgres()
  const urlOf = (name: string) => `${cluster.base}/${name}`
  const admin = urlOf("postgres")
  try {
    await withClient(admin, (c) => c.query("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'"))
    await cluster.halt()
    await cluster.resume()
    await withClient(admin, async (c) => {
      await c.query("CREATE EXTENSION pg_stat_statements")
      await c.query(`CREATE DATABASE ${TEMPLATE}`)
    })
    if (existsSync(dump)) {
      program("pg_restore", ["--no-owner", "-j", "2", "-d", urlOf(TEMPLATE), dump])
      // Migrations added since the dump was made.
      cli(["migrate", "--database-url", urlOf(TEMPLATE)])
    } else {
      for (const file of await files()) cli(["import", file, "--database-url", urlOf(TEMPLATE)])
      cli(["migrate", "--database-url", urlOf(TEMPLATE)])
      cli(["analytics", "rebuild", "--database-url", urlOf(TEMPLATE)])
      program("pg_dump", ["-Fc", "-Z", "1", "-f", `${dump}.part`, urlOf(TEMPLATE)])
      renameSync(`${dump}.part`, dump)
    }
    await withClient(urlOf(TEMPLATE), (c) => c.query("VACUUM ANALYZE"))
  } catch (e) {
    cluster.stop()
    throw e
  }
  return {
    cluster,
    urlOf,
    copies: (names) =>
      withClient(admin, async (c) => {
        for (const name of names) {
          await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
          await c.query(`CREATE DATABASE ${name} TEMPLATE ${TEMPLATE}`)
        }
      }),
    statements: (name) =>
      withClient(admin, async (c) => {
        const result = await c.query(
          `SELECT s.calls, regexp_replace(left(s.query, 90), '\\s+', ' ', 'g') AS query
           FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
           WHERE d.datname = $1 ORDER BY s.calls DESC`,
          [name]
        )
        let calls = 0
        const top: Array<string> = []
        for (const row of result.rows as Array<{ calls: string | number; query: string }>) {
          calls += Number(row.calls)
          if (top.length < 8) top.push(`${row.calls} × ${row.query}`)
        }
        return { calls, top }
      }),
    resetStatements: () => withClient(admin, async (c) => void (await c.query("SELECT pg_stat_statements_reset()"))),
    stop: () => cluster.stop()
  }
}

/**
 * The backends serving database `name` (title `postgres: USER NAME HOST(PORT) …`): their pids,
 * read from /proc, for their CPU time.
 */
export const backendsOf = (name: string): Array<number> => {
  const pids: Array<number> = []
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const title = readFileSync(`/proc/${entry}/cmdline`, "utf8").replaceAll("\u0000", " ")
      if (new RegExp(`^postgres: \\S+ ${name} `).test(title)) pids.push(Number(entry))
    } catch {
      // the process ended meanwhile
    }
  }
  return pids
}
