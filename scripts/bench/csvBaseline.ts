/**
 * Baseline for the CSV benchmark: the same export written by raw bun:sqlite (a streaming
 * statement iterator) in a process of its own. Prints {rows, seconds, bytes, peakRssMb} as JSON.
 *
 *   bun scripts/bench/csvBaseline.ts DB_PATH SURVEY_ID OUT_FILE
 */
import { Database } from "bun:sqlite"
import { peakRssMb } from "./support.js"

const [dbPath, surveyId, outFile] = process.argv.slice(2)
if (dbPath === undefined || surveyId === undefined || outFile === undefined) {
  throw new Error("usage: csvBaseline.ts DB_PATH SURVEY_ID OUT_FILE")
}
const db = new Database(dbPath, { readonly: true })
const questions = db.query<{ id: string; type: string; label: string }, [string]>(
  "SELECT id, type, label FROM questions WHERE survey_id = ? AND deleted = 0 AND type <> 'section' ORDER BY position, id"
).all(surveyId)
const quote = (s: string) => (/[",\r\n]/.test(s) ? `"${s.replaceAll("\"", "\"\"")}"` : s)
const cells = questions.map((_, i) => `(SELECT value FROM answers a WHERE a.response_id = r.id AND a.question_id = ?${i + 2}) AS c${i}`)
const statement = db.prepare<Record<string, string | number | null>, Array<string>>(
  `SELECT r.id, r.external_user_id, r.completed, r.completed_at, r.created_at, ${cells.join(", ")}
   FROM responses r WHERE r.survey_id = ?1 ORDER BY r.created_at, r.id`
)
const start = performance.now()
const sink = Bun.file(outFile).writer()
sink.write(["responseId", "surveyId", "externalUserId", "completed", "createdAt", "completedAt", ...questions.map((q) => q.label)].map(quote).join(",") + "\r\n")
let rows = 0
let bytes = 0
let buffer = ""
for (const row of statement.iterate(surveyId, ...questions.map((q) => q.id))) {
  const fields = [
    String(row.id),
    surveyId,
    String(row.external_user_id ?? ""),
    row.completed === 1 ? "true" : "false",
    String(row.created_at),
    String(row.completed_at ?? "")
  ]
  questions.forEach((q, i) => {
    const v = String(row[`c${i}`] ?? "")
    fields.push((q.type === "textarea" || q.type === "email") && /^[=+\-@\t\r]/.test(v) ? `'${v}` : v)
  })
  buffer += fields.map(quote).join(",") + "\r\n"
  rows++
  if (buffer.length > 1 << 16) {
    bytes += buffer.length
    sink.write(buffer)
    buffer = ""
  }
}
bytes += buffer.length
sink.write(buffer)
await sink.end()
console.log(JSON.stringify({ rows, seconds: (performance.now() - start) / 1000, bytes, peakRssMb: peakRssMb(process.pid) }))
