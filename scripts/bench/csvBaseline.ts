/**
 * Baseline for the CSV benchmark: the same export written by raw bun:sqlite in a process of its
 * own, the best found for the same bytes on the same storage: the service's statement (keyset
 * pages of 1,000 rows, one correlated lookup per question into `answers`, read as value rows) and
 * its line writer (src/Responses/CsvText.ts, no runtime imports), each page one string written to
 * a file sink. What differs is the stack around them: no Effect stream, no HTTP. Prints
 * {rows, seconds, cpuSeconds, bytes, sha256, peakRssMb} as JSON.
 *
 *   bun scripts/bench/csvBaseline.ts DB_PATH SURVEY_ID OUT_FILE
 */
import { Database } from "bun:sqlite"
import { csvLine, type CsvQuestion, type CsvRowReads, headerOf, isTextCell, rowLine } from "../../src/Responses/CsvText.js"
import { peakRssMb } from "./support.js"

const [dbPath, surveyId, outFile] = process.argv.slice(2)
if (dbPath === undefined || surveyId === undefined || outFile === undefined) {
  throw new Error("usage: csvBaseline.ts DB_PATH SURVEY_ID OUT_FILE")
}
const db = new Database(dbPath, { readonly: true })
const questions = db.query<CsvQuestion, [string]>(
  "SELECT id, type, label FROM questions WHERE survey_id = ? AND deleted = 0 AND type <> 'section' ORDER BY position, id"
).all(surveyId)
const textCell = questions.map((q) => isTextCell(q.type))
const cells = questions.map((_, i) => `(SELECT value FROM answers a WHERE a.response_id = r.id AND a.question_id = ?) AS c${i}`)
const select = `SELECT r.id, r.external_user_id, r.completed, r.completed_at, r.created_at${
  cells.length > 0 ? `, ${cells.join(", ")}` : ""
} FROM responses r WHERE r.survey_id = ?`
const first = db.prepare(`${select} ORDER BY r.created_at, r.id LIMIT 1000`)
const next = db.prepare(`${select} AND (r.created_at, r.id) > (?, ?) ORDER BY r.created_at, r.id LIMIT 1000`)
const params = [...questions.map((q) => q.id), surveyId]

const text = (v: unknown) => (typeof v === "string" ? v : v === null ? "" : String(v))
const orNull = (v: unknown) => (typeof v === "string" || v === null ? v : String(v))
// The cells as they come, unchecked (the export checks each one's type).
const reads: CsvRowReads<Array<unknown>> = {
  id: (row) => text(row[0]),
  externalUserId: (row) => orNull(row[1]),
  completed: (row) => row[2] === 1,
  completedAt: (row) => orNull(row[3]),
  createdAt: (row) => text(row[4]),
  answer: (row, i) => orNull(row[5 + i])
}

const start = performance.now()
const cpuStart = process.cpuUsage()
const sink = Bun.file(outFile).writer({ highWaterMark: 1024 * 1024 })
const write = (chunk: string) => {
  sink.write(chunk)
}
write(csvLine(headerOf(questions)))
let rows = 0
let bytes = 0
let after: [string, string] | null = null
while (true) {
  const page = (after === null ? first.values(...params) : next.values(...params, ...after)) as Array<Array<unknown>>
  let out = ""
  for (const row of page) out += rowLine(reads, surveyId, textCell, row)
  rows += page.length
  bytes += out.length
  write(out)
  const last = page[page.length - 1]
  if (page.length < 1000 || last === undefined) break
  after = [text(last[4]), text(last[0])]
}
await sink.end()
const seconds = (performance.now() - start) / 1000
const cpu = process.cpuUsage(cpuStart)
const cpuSeconds = (cpu.user + cpu.system) / 1e6
const peak = peakRssMb(process.pid)
// The bytes are compared after the clock stops.
const hash = new Bun.CryptoHasher("sha256")
hash.update(await Bun.file(outFile).arrayBuffer())
console.log(JSON.stringify({ rows, seconds, cpuSeconds, bytes, sha256: hash.digest("hex"), peakRssMb: peak }))
