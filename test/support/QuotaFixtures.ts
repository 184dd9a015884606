import type { FixtureInput } from "../../src/Fixtures/Fixture.js"

export const QUOTA_TOKENS = {
  first: "sk_test_quota_first_aaaaaaaaaaaa",
  second: "sk_test_quota_second_aaaaaaaaaaa",
  colleague: "sk_test_quota_colleague_aaaaaaaa",
  crowd: "sk_test_quota_crowd_aaaaaaaaaaaa",
  freeCreator: "sk_test_quota_freecreator_aaaaaa"
} as const

/**
 * One workspace whose owner has two keys on a small plan (burst 5 per minute, 8 a day, 12 a
 * month), a colleague on pro, an account on a burst-50 plan, and an editor whose own plan is free.
 */
export const quotaFixture: FixtureInput = {
  plans: [
    { id: "tiny", apiAccess: true, burstLimit: 5, burstWindowMinutes: 1, dailyLimit: 8, monthlyLimit: 12 },
    { id: "crowd", apiAccess: true, burstLimit: 50, burstWindowMinutes: 1, dailyLimit: 10_000, monthlyLimit: 100_000 }
  ],
  accounts: [
    { id: "acc_tiny", planId: "tiny" },
    { id: "acc_colleague", planId: "pro" },
    { id: "acc_crowd", planId: "crowd" },
    { id: "acc_free_editor", planId: "free" }
  ],
  workspaces: [{ id: "ws_q", ownerAccountId: "acc_tiny" }],
  members: [
    { workspaceId: "ws_q", accountId: "acc_tiny", role: "owner" },
    { workspaceId: "ws_q", accountId: "acc_colleague", role: "editor" },
    { workspaceId: "ws_q", accountId: "acc_crowd", role: "viewer" },
    { workspaceId: "ws_q", accountId: "acc_free_editor", role: "editor" }
  ],
  apiKeys: [
    { token: QUOTA_TOKENS.first, workspaceId: "ws_q", createdBy: "acc_tiny", surveyIds: null, revoked: false },
    { token: QUOTA_TOKENS.second, workspaceId: "ws_q", createdBy: "acc_tiny", surveyIds: ["srv_q"], revoked: false },
    { token: QUOTA_TOKENS.colleague, workspaceId: "ws_q", createdBy: "acc_colleague", surveyIds: null, revoked: false },
    { token: QUOTA_TOKENS.crowd, workspaceId: "ws_q", createdBy: "acc_crowd", surveyIds: null, revoked: false },
    { token: QUOTA_TOKENS.freeCreator, workspaceId: "ws_q", createdBy: "acc_free_editor", surveyIds: null, revoked: false }
  ],
  surveys: [
    {
      id: "srv_q",
      workspaceId: "ws_q",
      title: "Quota",
      status: "published",
      createdAt: "2026-01-01T00:00:00.000Z",
      updatedAt: "2026-01-01T00:00:00.000Z",
      questions: [{ id: "q_q", type: "textarea", label: "Say", order: 1 }]
    }
  ],
  responses: [
    { id: "rsp_q", surveyId: "srv_q", createdAt: "2026-01-02T00:00:00.000Z", completedAt: null, answers: [] }
  ]
}
