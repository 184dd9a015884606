import { describe, expect, it } from "@effect/vitest"
import { readdirSync, readFileSync } from "node:fs"
import { join, relative } from "node:path"

// The rule dependency-cruiser checks for imports (.dependency-cruiser.cjs), checked here for the
// statements themselves: SQL text lives only in repositories (`*Repo.ts`, `*Store.ts`, `*Sql.ts`)
// and under src/Sql.
const root = join(import.meta.dirname, "..", "src")

const sourceFiles = (dir: string): ReadonlyArray<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : []
  )

const mayHoldSql = (path: string) => path.startsWith("Sql/") || /(Repo|Store|Sql)\.ts$/.test(path)

const withoutComments = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "")

const statement = /\b(SELECT\s+(?:[\w*"(]|DISTINCT)|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+(?:UNIQUE\s+)?(?:TABLE|INDEX)|PRAGMA\s+\w+\s*(?:=|\(|["'`])|BEGIN\s+IMMEDIATE|VACUUM\s+INTO\s+[?$'"])/

/** The SQL statements of `text` outside comments, with their line numbers. */
export const statementsIn = (text: string): ReadonlyArray<string> =>
  withoutComments(text).split("\n").flatMap((line, i) => statement.test(line) ? [`${i + 1}: ${line.trim()}`] : [])

describe("SQL text", () => {
  it("finds a statement in code and none in comments", () => {
    expect(statementsIn("// SELECT id FROM surveys\nconst q = `SELECT id FROM surveys`")).toEqual(["2: const q = `SELECT id FROM surveys`"])
    expect(statementsIn("/* DELETE FROM x */ const ok = 1")).toEqual([])
    expect(statementsIn("const q = \"PRAGMA user_version\"")).toEqual(["1: const q = \"PRAGMA user_version\""])
    expect(statementsIn("describe(\"copies it (VACUUM INTO, then PRAGMA integrity_check)\")")).toEqual([])
  })

  it("lives only in repositories and src/Sql", () => {
    const offenders = sourceFiles(root)
      .map((file) => ({ path: relative(root, file), found: statementsIn(readFileSync(file, "utf8")) }))
      .filter(({ found, path }) => !mayHoldSql(path) && found.length > 0)
      .map(({ found, path }) => `src/${path}\n  ${found.join("\n  ")}`)
    expect(offenders).toEqual([])
  })
})
