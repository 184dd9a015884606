import { describe, expect, it } from "@effect/vitest"
import { readdirSync, readFileSync } from "node:fs"
import { join, relative } from "node:path"

// Repositories read a statement's rows one way: a row shape (src/Sql/Rows.ts) over `.values`
// (docs/architecture.md#reading-rows). A stored JSON cell may still be parsed by a Schema inside its
// column's read; what is checked here is that no statement's result is decoded another way. The
// migrations are frozen as they were written and are not checked.
const root = join(import.meta.dirname, "..", "src")

const sourceFiles = (dir: string): ReadonlyArray<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : []
  )

const readsRows = (path: string) =>
  !path.startsWith("Sql/migrations/") && (path.startsWith("Sql/") || /(Repo|Store|Sql)\.ts$/.test(path))

const withoutComments = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "")

const otherReads = [
  /\bSqlSchema\b/,
  /\bSchema\.decodeUnknown(?:Either|Option|Promise)?\(/,
  /\bSchema\.decode(?:Unknown)?Sync\(\s*Schema\.Array\(/,
  /\.(?:all|get)\(\s*\)\s*as\b/
]

/** The lines of `text` outside comments that read rows another way than a row shape. */
export const otherReadsIn = (text: string): ReadonlyArray<string> =>
  withoutComments(text).split("\n").flatMap((line, i) =>
    otherReads.some((pattern) => pattern.test(line)) ? [`${i + 1}: ${line.trim()}`] : []
  )

describe("reading rows", () => {
  it("finds a decode of a statement's rows, not a JSON cell's parse or a comment", () => {
    expect(otherReadsIn("const find = SqlSchema.findOne({ Request, Result, execute })")).toHaveLength(1)
    expect(otherReadsIn("Effect.flatMap(Schema.decodeUnknown(Rows))")).toHaveLength(1)
    expect(otherReadsIn("Schema.decodeUnknownSync(Schema.Array(Row))(rows)")).toHaveLength(1)
    expect(otherReadsIn("const decodeSettings = Schema.decodeUnknownSync(Schema.parseJson(Settings))")).toEqual([])
    expect(otherReadsIn("// SqlSchema.findAll was used here\nconst rows = shape.read(row)")).toEqual([])
  })

  it("is one way in every repository: a row shape over the statement's values", () => {
    const offenders = sourceFiles(root)
      .map((file) => ({ path: relative(root, file), found: otherReadsIn(readFileSync(file, "utf8")) }))
      .filter(({ found, path }) => readsRows(path) && found.length > 0)
      .map(({ found, path }) => `src/${path}\n  ${found.join("\n  ")}`)
    expect(offenders).toEqual([])
  })
})
