import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import { ResponseId, SurveyId, WebhookId, WorkspaceId } from "../src/Domain/Ids.js"
import { Survey } from "../src/Domain/Survey.js"
import type { SurveyRepo } from "../src/Surveys/SurveyRepo.js"
import type { WebhookRepo } from "../src/Webhooks/WebhookRepo.js"

// Checked by the type-check (`bun run typecheck`): each `@ts-expect-error` must meet an error, so
// a brand taken off makes the type-check fail here.
export const misuses = (surveys: SurveyRepo, webhooks: WebhookRepo, webhook: WebhookId, survey: SurveyId) => [
  // @ts-expect-error a webhook id is not a survey id
  surveys.findById(webhook),
  // @ts-expect-error a plain string is not a survey id
  surveys.findById("srv_main"),
  // @ts-expect-error a survey id is not a workspace id
  webhooks.find(survey, null),
  // @ts-expect-error nor is a response id a survey id
  surveys.findById(ResponseId.make("rsp_1"))
]

describe("branded ids", () => {
  it("are the same strings on the wire", () => {
    const wire = {
      id: "srv_main",
      title: "T",
      description: null,
      status: "draft",
      published: false,
      questionCount: 0,
      responseCount: 0,
      createdAt: "2026-01-01T00:00:00.000Z",
      updatedAt: "2026-01-01T00:00:00.000Z"
    } as const
    const survey = Schema.decodeUnknownSync(Survey)(wire)
    expect(survey.id).toBe("srv_main")
    expect(Schema.encodeSync(Survey)(survey)).toEqual(wire)
    for (const id of [SurveyId, ResponseId, WorkspaceId, WebhookId]) {
      expect(Schema.decodeUnknownSync(id)("x_1")).toBe("x_1")
      expect(Schema.encodeSync(id)(id.make("x_1"))).toBe("x_1")
    }
  })
})
