/**
 * What a quota commit costs the next responses page read, in one process: the service's page
 * statement (src/Responses/ResponseRepo.ts, a page of 100) read on a read-only connection right
 * after a commit of the quota's kind by another connection, with the commit on the main file (as
 * before migration 0013), on the quota file beside it (as now), or no commit at all. In WAL mode a
 * connection that sees a new commit to its file starts with an empty page cache; a commit to
 * another file leaves it alone. CPU time of the reads only, alternated three times.
 *
 *   bun scripts/bench/pageAfterCommit.ts [--db .bench/read-….db] [--reads 5000]
 *
 * Runs on a copy of the read benchmark's dataset (`bun run bench:read` makes it).
 */
import { Database } from "bun:sqlite"
import { Option } from "effect"
import { copyFileSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { SurveyId } from "../../src/Domain/Ids.js"
import { quotaFilePath } from "../../src/Quota/QuotaFileSql.js"
import { pageStatement } from "../../src/Responses/ResponseRepo.js"
import { surveyId } from "./Dataset.js"

const { values: args } = parseArgs({
  options: { db: { type: "string" }, reads: { type: "string", default: "5000" } },
  strict: true
})
const benchDir = join(import.meta.dir, "../../.bench")
const newest = () =>
  existsSync(benchDir)
    ? readdirSync(benchDir)
      .filter((name) => /^read-.*\.db$/.test(name))
      .map((name) => join(benchDir, name))
      .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0]
    : undefined
const source = args.db ?? newest()
if (source === undefined || !existsSync(source) || !existsSync(quotaFilePath(source))) {
  throw new Error("no read dataset with its quota file: run `bun run bench:read` first, or pass --db")
}
const reads = Math.min(100_000, Math.max(100, Number(args.reads)))

const work = mkdtempSync(join(tmpdir(), "page-after-commit-"))
const file = join(work, "survey.db")
copyFileSync(source, file)
copyFileSync(quotaFilePath(source), quotaFilePath(file))
try {
  const reader = new Database(file, { readonly: true })
  const statement = pageStatement({
    surveyId: SurveyId.make(surveyId(1)),
    status: "all",
    order: "createdAt",
    from: undefined,
    after: Option.none(),
    limit: 100
  })
  const page = reader.query(statement.text)
  const params = statement.params.map((p) => (typeof p === "string" || typeof p === "number" ? p : String(p)))
  const writers = { "main file": new Database(file), "quota file": new Database(quotaFilePath(file)) }
  for (const writer of Object.values(writers)) writer.exec("PRAGMA synchronous = NORMAL")
  const cpu = () => {
    const used = process.cpuUsage()
    return used.user + used.system
  }
  const results = new Map<string, Array<number>>()
  for (let round = 0; round < 3; round++) {
    for (const where of ["no commit", "main file", "quota file"] as const) {
      const writer = where === "no commit" ? undefined : writers[where]
      const add = writer?.query(`INSERT INTO usage_daily (account_id, day, count) VALUES ('acc_bench', '2026-01-01', 1)
        ON CONFLICT (account_id, day) DO UPDATE SET count = usage_daily.count + 1`)
      let spent = 0
      for (let i = 0; i < reads; i++) {
        if (writer !== undefined && add !== undefined) {
          writer.exec("BEGIN IMMEDIATE")
          add.run()
          writer.exec("COMMIT")
        }
        const started = cpu()
        page.values(...params)
        spent += cpu() - started
      }
      results.set(where, [...(results.get(where) ?? []), spent / reads])
    }
  }
  console.log(`A page of 100 read right after a commit, CPU µs per read (${reads} reads per round, load average ${loadavg()[0]?.toFixed(1)}):`)
  console.log("")
  console.log("| commit before each read | round 1 | round 2 | round 3 |")
  console.log("|---|---:|---:|---:|")
  for (const [where, figures] of results) console.log(`| ${where} | ${figures.map((f) => f.toFixed(0)).join(" | ")} |`)
  reader.close()
  for (const writer of Object.values(writers)) writer.close()
} finally {
  rmSync(work, { recursive: true, force: true })
}
