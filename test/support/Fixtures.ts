import type { FixtureInput } from "../../src/Fixtures/Fixture.js"

export const TOKENS = {
  editor: "sk_test_editor_aaaaaaaaaaaaaaaa",
  viewer: "sk_test_viewer_aaaaaaaaaaaaaaaa",
  limited: "sk_test_limited_aaaaaaaaaaaaaaa",
  revoked: "sk_test_revoked_aaaaaaaaaaaaaaa",
  formerMember: "sk_test_former_aaaaaaaaaaaaaaaa",
  freePlan: "sk_test_freeplan_aaaaaaaaaaaaaa",
  other: "sk_test_other_aaaaaaaaaaaaaaaaa"
} as const

const t = (day: number, minute = 0) => new Date(Date.UTC(2026, 0, day, 0, minute)).toISOString()

/** Two workspaces with every kind of key and survey the access rules tell apart. */
export const baseFixture: FixtureInput = {
  // A plan with room for the hundreds of calls one suite makes under a frozen test clock;
  // the quota suites use plans of their own.
  plans: [{
    id: "roomy",
    apiAccess: true,
    burstLimit: 100_000,
    burstWindowMinutes: 1,
    dailyLimit: 1_000_000,
    monthlyLimit: 10_000_000
  }],
  accounts: [
    { id: "acc_owner", planId: "roomy" },
    { id: "acc_viewer", planId: "roomy" },
    { id: "acc_former", planId: "roomy" },
    { id: "acc_free", planId: "free" },
    { id: "acc_other", planId: "business" }
  ],
  workspaces: [
    { id: "ws_a", ownerAccountId: "acc_owner" },
    { id: "ws_free", ownerAccountId: "acc_free" },
    { id: "ws_b", ownerAccountId: "acc_other" }
  ],
  members: [
    { workspaceId: "ws_a", accountId: "acc_owner", role: "owner" },
    { workspaceId: "ws_a", accountId: "acc_viewer", role: "viewer" },
    { workspaceId: "ws_free", accountId: "acc_free", role: "owner" },
    { workspaceId: "ws_b", accountId: "acc_other", role: "owner" }
  ],
  apiKeys: [
    { token: TOKENS.editor, workspaceId: "ws_a", createdBy: "acc_owner", surveyIds: null, revoked: false },
    { token: TOKENS.viewer, workspaceId: "ws_a", createdBy: "acc_viewer", surveyIds: null, revoked: false },
    { token: TOKENS.limited, workspaceId: "ws_a", createdBy: "acc_owner", surveyIds: ["srv_main"], revoked: false },
    { token: TOKENS.revoked, workspaceId: "ws_a", createdBy: "acc_owner", surveyIds: null, revoked: true },
    { token: TOKENS.formerMember, workspaceId: "ws_a", createdBy: "acc_former", surveyIds: null, revoked: false },
    { token: TOKENS.freePlan, workspaceId: "ws_free", createdBy: "acc_free", surveyIds: null, revoked: false },
    { token: TOKENS.other, workspaceId: "ws_b", createdBy: "acc_other", surveyIds: null, revoked: false }
  ],
  surveys: [
    {
      id: "srv_main",
      workspaceId: "ws_a",
      title: "Main",
      description: "The main survey",
      status: "published",
      createdAt: t(1),
      updatedAt: t(5),
      questions: [
        { id: "q_section", type: "section", label: "Part one", order: 1 },
        { id: "q_text", type: "textarea", label: "Say something", order: 2 },
        {
          id: "q_pick",
          type: "checkbox",
          label: "Pick",
          required: true,
          allowMultiple: true,
          order: 3,
          options: [{ value: "a", label: "A" }, { value: "b", label: "B" }, { value: "c", label: "C" }]
        },
        {
          id: "q_rank",
          type: "sort",
          label: "Rank",
          order: 4,
          options: [{ value: "x", label: "X" }, { value: "y", label: "Y" }]
        },
        { id: "q_num", type: "number", label: "How many", order: 5 },
        { id: "q_gone", type: "email", label: "Deleted question", order: 6, deleted: true }
      ]
    },
    { id: "srv_draft", workspaceId: "ws_a", title: "Draft", status: "draft", createdAt: t(2), updatedAt: t(6) },
    { id: "srv_closed", workspaceId: "ws_a", title: "Closed", status: "closed", createdAt: t(2), updatedAt: t(4) },
    {
      id: "srv_trashed",
      workspaceId: "ws_a",
      title: "Trashed",
      status: "published",
      trashed: true,
      createdAt: t(2),
      updatedAt: t(9)
    },
    { id: "srv_other", workspaceId: "ws_b", title: "Other workspace", status: "published", createdAt: t(1), updatedAt: t(1) }
  ],
  responses: [
    {
      id: "rsp_1",
      surveyId: "srv_main",
      externalUserId: "user-1",
      createdAt: t(10),
      completedAt: t(10, 5),
      answers: [
        { questionId: "q_gone", values: ["old@example.com"] },
        { questionId: "q_pick", values: ["a", "c"] },
        { questionId: "q_text", values: ["hello"] },
        { questionId: "q_rank", values: ["y"] },
        { questionId: "q_num", values: ["42"] }
      ]
    },
    {
      id: "rsp_2",
      surveyId: "srv_main",
      createdAt: t(11),
      completedAt: null,
      answers: [{ questionId: "q_pick", values: ["b"] }]
    },
    {
      id: "rsp_3",
      surveyId: "srv_main",
      createdAt: t(12),
      completedAt: t(12, 1),
      answers: [{ questionId: "q_rank", values: ["x", "y"] }]
    }
  ]
}
