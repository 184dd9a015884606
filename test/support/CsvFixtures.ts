import type { FixtureInput } from "../../src/Fixtures/Fixture.js"
import { baseFixture } from "./Fixtures.js"

const at = (n: number) => new Date(Date.UTC(2026, 2, 1) + n * 1000).toISOString()

/** Free-text answers that a spreadsheet would run as formulas, and ones that need quoting. */
export const trickyTexts = ["=SUM(A1:A2)", "+1", "-2", "@cmd", "\tindent", "\rreturn", "a, b", "say \"hi\"", "two\r\nlines"]

/** Surveys for the CSV export: repeated labels, every cell kind, and more responses than one page. */
export const csvFixture: FixtureInput = {
  ...baseFixture,
  surveys: [
    ...(baseFixture.surveys ?? []),
    {
      id: "srv_csv",
      workspaceId: "ws_a",
      title: "Export",
      status: "published",
      createdAt: at(0),
      updatedAt: at(0),
      questions: [
        { id: "c_section", type: "section", label: "Intro", order: 1 },
        { id: "c_text", type: "textarea", label: "Comment", order: 2 },
        { id: "c_num", type: "number", label: "Amount", order: 3 },
        { id: "c_text2", type: "textarea", label: "Comment", order: 4 },
        { id: "c_mail", type: "email", label: "Comment", order: 5 },
        {
          id: "c_pick",
          type: "checkbox",
          label: "Pick",
          allowMultiple: true,
          order: 6,
          options: [{ value: "a", label: "A" }, { value: "b", label: "B" }]
        },
        { id: "c_gone", type: "textarea", label: "Gone", order: 7, deleted: true }
      ]
    },
    {
      id: "srv_big",
      workspaceId: "ws_a",
      title: "Big",
      status: "published",
      createdAt: at(0),
      updatedAt: at(0),
      questions: [{ id: "b_num", type: "number", label: "N", order: 1 }]
    }
  ],
  responses: [
    ...trickyTexts.map((text, i) => ({
      id: `rsp_csv_${i}`,
      surveyId: "srv_csv",
      externalUserId: i === 0 ? "ext,1" : null,
      createdAt: at(10 + i),
      completedAt: i % 2 === 0 ? at(100 + i) : null,
      answers: [
        { questionId: "c_text", values: [text] },
        { questionId: "c_num", values: ["-3.5"] },
        { questionId: "c_mail", values: ["=x@example.com"] },
        { questionId: "c_pick", values: i % 3 === 0 ? ["a", "b"] : ["b"] },
        { questionId: "c_gone", values: ["old"] }
      ]
    })),
    ...Array.from({ length: 4321 }, (_, i) => ({
      id: `rsp_big_${String(i).padStart(5, "0")}`,
      surveyId: "srv_big",
      createdAt: at(1000 + i),
      completedAt: at(1000 + i),
      answers: [{ questionId: "b_num", values: [String(i)] }]
    }))
  ]
}
