import { expect, layer } from "@effect/vitest"
import { parse } from "csv-parse/sync"
import { Effect, Schema } from "effect"
import { seedDemo } from "../src/Demo/Seed.js"
import { trickyTexts, csvFixture } from "./support/CsvFixtures.js"
import { SurveyId } from "../src/Domain/Ids.js"
import { clientFor, outcomeOf } from "./support/ApiClient.js"
import { TOKENS } from "./support/Fixtures.js"
import { bodyOf, get, TestServer } from "./support/TestServer.js"

const records = (text: string): Array<Array<string>> => parse(text, { record_delimiter: "\r\n", relax_quotes: false })

const QuestionLabels = Schema.Struct({ data: Schema.Array(Schema.Struct({ label: Schema.String })) })
const ResponseIds = Schema.Struct({
  data: Schema.Array(Schema.Struct({ id: Schema.String })),
  nextCursor: Schema.NullOr(Schema.String)
})

const fixed = ["responseId", "surveyId", "externalUserId", "completed", "createdAt", "completedAt"]

layer(TestServer(csvFixture))("GET /api/v1/surveys/{id}/responses?format=csv", (it) => {
  it.effect("streams an RFC 4180 download with one column per current question", () =>
    Effect.gen(function*() {
      const res = yield* get("/api/v1/surveys/srv_csv/responses?format=csv", TOKENS.editor)
      expect(res.status).toBe(200)
      expect(res.headers["content-type"]).toMatch(/^text\/csv/)
      expect(res.headers["content-disposition"]).toBe("attachment; filename=\"srv_csv-responses.csv\"")
      expect(res.text.charCodeAt(0)).not.toBe(0xfeff)
      // Every line ends with CRLF; bare LF only appears inside a quoted field.
      expect(res.text.endsWith("\r\n")).toBe(true)
      expect(res.text.replaceAll("\r\n", "").includes("\n")).toBe(false)

      const [header, ...rows] = records(res.text)
      expect(header).toEqual([...fixed, "Comment", "Amount", "Comment (2)", "Comment (3)", "Pick"])
      expect(rows).toHaveLength(trickyTexts.length)
      rows.forEach((row, i) => {
        const text = trickyTexts[i] ?? ""
        expect(row[0]).toBe(`rsp_csv_${i}`)
        expect(row[1]).toBe("srv_csv")
        expect(row[3]).toBe(i % 2 === 0 ? "true" : "false")
        expect(row[5]).toBe(i % 2 === 0 ? new Date(Date.UTC(2026, 2, 1) + (100 + i) * 1000).toISOString() : "")
        expect(row[6]).toBe(/^[=+\-@\t\r]/.test(text) ? `'${text}` : text)
        expect(row[7]).toBe("-3.5")
        expect(row[8]).toBe("")
        expect(row[9]).toBe("'=x@example.com")
        expect(row[10]).toBe(i % 3 === 0 ? "[\"a\",\"b\"]" : "b")
      })
      expect(rows[0]?.[2]).toBe("ext,1")
      // Quoting is exactly where RFC 4180 needs it.
      expect(res.text).toContain(",\"a, b\",")
      expect(res.text).toContain(",\"say \"\"hi\"\"\",")
      expect(res.text).toContain(",'-2,-3.5,")
    }))

  it.effect("honours status and createdAfter and ignores cursor and limit", () =>
    Effect.gen(function*() {
      const completed = yield* get(
        "/api/v1/surveys/srv_csv/responses?format=csv&status=completed&limit=1&cursor=not-a-cursor",
        TOKENS.editor
      )
      expect(completed.status).toBe(200)
      expect(records(completed.text).slice(1).map((r) => r[0])).toEqual(["rsp_csv_0", "rsp_csv_2", "rsp_csv_4", "rsp_csv_6", "rsp_csv_8"])
      // Values the paged list refuses are ignored too; the other parameters still apply.
      for (const paging of ["limit=1000", "limit=abc&cursor=%25%25", "cursor=&limit=-1", "limit=0&limit=5"]) {
        const res = yield* get(`/api/v1/surveys/srv_csv/responses?${paging}&format=csv&status=completed`, TOKENS.editor)
        expect(res.status, paging).toBe(200)
        expect(res.text, paging).toBe(completed.text)
      }
      // The paged list still refuses them.
      const paged = yield* get("/api/v1/surveys/srv_csv/responses?limit=1000", TOKENS.editor)
      expect(paged.status).toBe(400)
      expect(paged.body).toMatchObject({ code: "invalid_request", issues: [{ path: "limit" }] })
      const incomplete = yield* get("/api/v1/surveys/srv_csv/responses?format=csv&status=incomplete", TOKENS.editor)
      expect(records(incomplete.text).slice(1).map((r) => r[0])).toEqual(["rsp_csv_1", "rsp_csv_3", "rsp_csv_5", "rsp_csv_7"])
      const after = new Date(Date.UTC(2026, 2, 1) + 15 * 1000).toISOString()
      const recent = yield* get(`/api/v1/surveys/srv_csv/responses?format=csv&createdAfter=${after}`, TOKENS.editor)
      expect(records(recent.text).slice(1).map((r) => r[0])).toEqual(["rsp_csv_5", "rsp_csv_6", "rsp_csv_7", "rsp_csv_8"])
    }))

  it.effect("walks every page of a large survey in order, each response once", () =>
    Effect.gen(function*() {
      const res = yield* get("/api/v1/surveys/srv_big/responses?format=csv", TOKENS.viewer)
      const [header, ...rows] = records(res.text)
      expect(header).toEqual([...fixed, "N"])
      expect(rows).toHaveLength(4321)
      expect(rows.map((r) => r[6])).toEqual(Array.from({ length: 4321 }, (_, i) => String(i)))
    }))

  it.effect("GET /surveys/{id}/responses.csv answers the same download, with the same filters", () =>
    Effect.gen(function*() {
      for (
        const filters of ["", "?status=completed", "?status=incomplete&limit=1000&cursor=%25%25",
          `?createdAfter=${new Date(Date.UTC(2026, 2, 1) + 15 * 1000).toISOString()}`]
      ) {
        const viaFormat = yield* get(
          `/api/v1/surveys/srv_csv/responses?format=csv${filters.replace("?", "&")}`,
          TOKENS.editor
        )
        const viaPath = yield* get(`/api/v1/surveys/srv_csv/responses.csv${filters}`, TOKENS.editor)
        expect(viaPath.status, filters).toBe(200)
        expect(viaPath.text, filters).toBe(viaFormat.text)
        expect(viaPath.headers["content-type"], filters).toBe(viaFormat.headers["content-type"])
        expect(viaPath.headers["content-disposition"], filters).toBe(viaFormat.headers["content-disposition"])
      }
      const exportOf = (id: string, token?: string) =>
        outcomeOf(Effect.flatMap(clientFor(token), (api) => api.responses.exportCsv({ path: { id: SurveyId.make(id) }, urlParams: {} })))
      expect(yield* exportOf("srv_other", TOKENS.editor)).toBe("NotFound")
      const bad = yield* get("/api/v1/surveys/srv_csv/responses.csv?createdAfter=2026-02-30T00:00:00Z", TOKENS.editor)
      expect(bad.body).toMatchObject({ code: "invalid_request", issues: [{ path: "createdAfter" }] })
      expect(yield* exportOf("srv_csv")).toBe("Unauthorized")
    }))

  it.effect("answers errors as JSON like the paged list", () =>
    Effect.gen(function*() {
      const missing = yield* get("/api/v1/surveys/srv_other/responses?format=csv", TOKENS.editor)
      expect(missing.status).toBe(404)
      expect(missing.body).toMatchObject({ code: "not_found" })
      const bad = yield* get("/api/v1/surveys/srv_csv/responses?format=xml", TOKENS.editor)
      expect(bad.status).toBe(400)
      expect(bad.body).toMatchObject({ code: "invalid_request" })
      expect((yield* get("/api/v1/surveys/srv_csv/responses?format=csv")).status).toBe(401)
    }))
})

layer(TestServer())("the demo survey's CSV", (it) => {
  it.effect("parses into one full-width record per response, in list order", () =>
    Effect.gen(function*() {
      const { editorToken } = yield* seedDemo()
      const res = yield* get("/api/v1/surveys/srv_demo_feedback/responses?format=csv", editorToken)
      expect(res.status).toBe(200)
      const [header, ...rows] = records(res.text)
      const questions = yield* get("/api/v1/surveys/srv_demo_feedback/questions", editorToken)
      const labels = bodyOf(QuestionLabels, questions).data.map((q) => q.label)
      expect(header).toEqual([...fixed, ...labels])
      expect(rows.length).toBeGreaterThan(100)
      for (const row of rows) expect(row).toHaveLength(fixed.length + labels.length)
      const ids: Array<string> = []
      let cursor: string | null = null
      do {
        const query: string = cursor === null ? "" : `&cursor=${cursor}`
        const page = yield* get(`/api/v1/surveys/srv_demo_feedback/responses?limit=100${query}`, editorToken)
        const body = bodyOf(ResponseIds, page)
        ids.push(...body.data.map((r) => r.id))
        cursor = body.nextCursor
      } while (cursor !== null)
      expect(rows.map((r) => r[0])).toEqual(ids)
    }))
})
