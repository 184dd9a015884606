import { expect, layer } from "@effect/vitest"
import { parse } from "csv-parse/sync"
import { Effect } from "effect"
import type { FixtureInput } from "../src/Fixtures/Fixture.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { get, TestServer } from "./support/TestServer.js"

const at = (n: number) => new Date(Date.UTC(2026, 2, 1) + n * 1000).toISOString()

/** Ids that integrators' end users may choose: a spreadsheet would run the first three as formulas. */
const externalIds = ["=cmd|' /C calc'!A0", "@SUM(1+1)", "+1-1", "plain-id"]

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
    }
  ],
  responses: externalIds.map((externalUserId, i) => ({
    id: `rsp_ids_${i}`,
    surveyId: "srv_ids",
    externalUserId,
    createdAt: at(10 + i),
    completedAt: at(20 + i),
    answers: [{ questionId: "i_text", values: ["hello"] }]
  }))
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
})
