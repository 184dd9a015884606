import type { FixtureInput } from "../../src/Fixtures/Fixture.js"
import { baseFixture } from "./Fixtures.js"

const t = (day: number) => new Date(Date.UTC(2026, 0, day)).toISOString()

const imageOption = (value: string, colour: string) => ({
  value,
  label: `data:image/svg+xml,${encodeURIComponent(
    `<svg xmlns="http://www.w3.org/2000/svg" width="96" height="64"><rect width="96" height="64" fill="${colour}"/></svg>`
  )}`
})

/** A published survey with every question type, sections, image options, and a heatmap picture. */
export const allTypesQuestions = [
  { id: "q_all_s1", type: "section" as const, label: "About you", order: 1 },
  { id: "q_all_email", type: "email" as const, label: "Your email", order: 2, required: true },
  { id: "q_all_country", type: "country" as const, label: "Your country", order: 3, required: true },
  { id: "q_all_since", type: "calendar" as const, label: "Customer since", order: 4 },
  { id: "q_all_s2", type: "section" as const, label: "Your opinion", order: 5 },
  {
    id: "q_all_role",
    type: "checkbox" as const,
    label: "Your role",
    order: 6,
    required: true,
    options: [{ value: "dev", label: "Developer" }, { value: "pm", label: "Product manager" }]
  },
  {
    id: "q_all_colours",
    type: "checkbox" as const,
    label: "Colours you like",
    order: 7,
    allowMultiple: true,
    options: [imageOption("red", "#d33"), imageOption("green", "#3a3"), imageOption("blue", "#36d")],
    settings: { optionType: "image" }
  },
  {
    id: "q_all_scale",
    type: "scale" as const,
    label: "How satisfied are you?",
    order: 8,
    required: true,
    options: ["1", "2", "3", "4", "5"].map((v) => ({ value: v, label: v }))
  },
  { id: "q_all_seats", type: "number" as const, label: "Seats", order: 9 },
  {
    id: "q_all_rank",
    type: "sort" as const,
    label: "Rank these",
    order: 10,
    options: [{ value: "speed", label: "Speed" }, { value: "price", label: "Price" }, { value: "docs", label: "Docs" }]
  },
  {
    id: "q_all_heat",
    type: "heatmap" as const,
    label: "Where do you look first?",
    order: 11,
    settings: { imageUrl: "/assets/demo-dashboard.svg" }
  },
  { id: "q_all_comment", type: "textarea" as const, label: "Anything else?", order: 12 }
]

export const respondentFixture: FixtureInput = {
  ...baseFixture,
  surveys: [
    ...(baseFixture.surveys ?? []),
    {
      id: "srv_all",
      workspaceId: "ws_a",
      title: "Every question type",
      description: "A survey with one question of each kind.",
      status: "published",
      createdAt: t(1),
      updatedAt: t(2),
      questions: allTypesQuestions
    },
    {
      id: "srv_short",
      workspaceId: "ws_a",
      title: "Short",
      status: "published",
      createdAt: t(1),
      updatedAt: t(2),
      questions: [{ id: "q_short_text", type: "textarea", label: "Say hi", order: 1, required: true }]
    }
  ]
}

/** Valid answers to every question of `srv_all`, as the respondent API takes them. */
export const allTypesAnswers = [
  { questionId: "q_all_email", values: ["person@example.com"] },
  { questionId: "q_all_country", values: ["nl"] },
  { questionId: "q_all_since", values: ["2024-02-29"] },
  { questionId: "q_all_role", values: ["pm"] },
  { questionId: "q_all_colours", values: ["red", "blue"] },
  { questionId: "q_all_scale", values: ["4"] },
  { questionId: "q_all_seats", values: ["007.50"] },
  { questionId: "q_all_rank", values: ["docs", "speed"] },
  { questionId: "q_all_heat", values: ["0.25,0.5000"] },
  { questionId: "q_all_comment", values: ["=hello, \"world\"\nsecond line"] }
]
