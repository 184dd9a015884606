import { expect, layer } from "@effect/vitest"
import { parse } from "csv-parse/sync"
import { Effect } from "effect"
import { SurveyId } from "../src/Domain/Ids.js"
import type { FixtureInput } from "../src/Fixtures/Fixture.js"
import { clientFor } from "./support/ApiClient.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { get, TestServer } from "./support/TestServer.js"

const at = (n: number) => new Date(Date.UTC(2026, 2, 1) + n * 1000).toISOString()

/** Ids that integrators' end users may choose: a spreadsheet would run the first three as formulas. */
const externalIds = ["=cmd|' /C calc'!A0", "@SUM(1+1)", "+1-1", "plain-id"]

/** Survey ids an import may hold: a quote and a semicolon, a backslash, a letter outside ASCII. */
const oddIds = ["srv_\"q;x", "srv_back\\slash", "srv_ümlaut"]

const fixture: FixtureInput = {
  ...baseFixture,
  surveys: [
    ...(baseFixture.surveys ?? []),
    {
      id: "srv_ids",
      workspaceId: "ws_a",
      title: "Ids",
      status: "published",
      createdAt: at(0),
      updatedAt: at(0),
      questions: [{ id: "i_text", type: "textarea", label: "Text", order: 1 }]
    },
    {
      id: "srv_labels",
      workspaceId: "ws_a",
      title: "Labels an editor chose",
      status: "published",
      createdAt: at(0),
      updatedAt: at(0),
      questions: [
        { id: "l_formula", type: "textarea", label: "=HYPERLINK(\"http://x\")", order: 1 },
        { id: "l_tab", type: "email", label: "\tTab", order: 2 },
        {
          id: "l_pick",
          type: "checkbox",
          label: "+Pick",
          required: false,
          allowMultiple: false,
          order: 3,
          options: [{ value: "=1+1", label: "Formula" }, { value: "@SUM(A1)", label: "At" }, { value: "-x", label: "Minus" }]
        },
        { id: "l_country", type: "country", label: "-Country", order: 4 },
        { id: "l_number", type: "number", label: "@Number", order: 5 },
        { id: "l_plain", type: "textarea", label: "Plain", order: 6 }
      ]
    },
    ...oddIds.map((id, i) => ({
      id,
      workspaceId: "ws_a",
      title: "Odd id",
      status: "published" as const,
      createdAt: at(0),
      updatedAt: at(0),
      questions: [{ id: `q_odd_${i}`, type: "textarea" as const, label: "Text", order: 1 }]
    }))
  ],
  responses: [
    ...externalIds.map((externalUserId, i) => ({
      id: `rsp_ids_${i}`,
      surveyId: "srv_ids",
      externalUserId,
      createdAt: at(10 + i),
      completedAt: at(20 + i),
      answers: [{ questionId: "i_text", values: ["hello"] }]
    })),
    ...["=1+1", "@SUM(A1)", "-x"].map((option, i) => ({
      id: `rsp_labels_${i}`,
      surveyId: "srv_labels",
      externalUserId: null,
      createdAt: at(30 + i),
      completedAt: at(40 + i),
      answers: [
        { questionId: "l_pick", values: [option] },
        { questionId: "l_number", values: [String(-5 - i)] },
        { questionId: "l_plain", values: ["\rcarriage"] }
      ]
    }))
  ]
}

const records = (text: string): Array<Array<string>> => parse(text, { record_delimiter: "\r\n", relax_quotes: false })

layer(TestServer(fixture))("the CSV export's cells an integrator's end user chose", (it) => {
  it.effect("an externalUserId a spreadsheet would run as a formula gets a leading apostrophe", () =>
    Effect.gen(function*() {
      const res = yield* get("/api/v1/surveys/srv_ids/responses?format=csv", TOKENS.editor)
      expect(res.status).toBe(200)
      const [header, ...rows] = records(res.text)
      expect(header?.[2]).toBe("externalUserId")
      expect(rows.map((row) => row[2])).toEqual(["'=cmd|' /C calc'!A0", "'@SUM(1+1)", "'+1-1", "plain-id"])
    }))

  it.effect("question labels in the header row and option values in answer cells are guarded; numeric cells are not", () =>
    Effect.gen(function*() {
      const api = yield* clientFor(TOKENS.editor)
      const csv = yield* api.responses.exportCsv({ path: { id: SurveyId.make("srv_labels") }, urlParams: {} })
      const [header, ...rows] = records(csv)
      expect(header?.slice(6)).toEqual(["'=HYPERLINK(\"http://x\")", "'\tTab", "'+Pick", "'-Country", "'@Number", "Plain"])
      expect(rows.map((row) => row.slice(6))).toEqual([
        ["", "", "'=1+1", "", "-5", "'\rcarriage"],
        ["", "", "'@SUM(A1)", "", "-6", "'\rcarriage"],
        ["", "", "'-x", "", "-7", "'\rcarriage"]
      ])
    }))
})

/** `Content-Disposition` read as RFC 6266 says: the quoted `filename`, and `filename*` when given. */
const dispositionOf = (header: string) => {
  const match = /^attachment; filename="((?:[^"\\]|\\.)*)"(?:; filename\*=UTF-8''([A-Za-z0-9!#$&+\-.^_`|~%]+))?$/.exec(header)
  if (match === null) return undefined
  return {
    filename: (match[1] ?? "").replace(/\\(.)/g, "$1"),
    extended: match[2] === undefined ? undefined : decodeURIComponent(match[2])
  }
}

layer(TestServer(fixture))("the CSV download's name", (it) => {
  it.effect("a survey id with a quote, a semicolon, a backslash or a letter outside ASCII gives a valid Content-Disposition", () =>
    Effect.gen(function*() {
      for (const id of oddIds) {
        const res = yield* get(`/api/v1/surveys/${encodeURIComponent(id)}/responses.csv`, TOKENS.editor)
        expect(res.status).toBe(200)
        const parsed = dispositionOf(res.headers["content-disposition"] ?? "")
        expect(parsed?.extended).toBe(`${id}-responses.csv`)
        // The plain name is the same where ASCII allows, for clients that read only it.
        expect(parsed?.filename).toBe(`${id.replace(/[^\x20-\x7e]/g, "_")}-responses.csv`)
      }
      const plain = yield* get("/api/v1/surveys/srv_ids/responses.csv", TOKENS.editor)
      expect(plain.headers["content-disposition"]).toBe("attachment; filename=\"srv_ids-responses.csv\"")
    }))
})
