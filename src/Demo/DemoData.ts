import type { FixtureInput } from "../Fixtures/Fixture.js"

/** A small deterministic generator, so the demo data is the same on every machine. */
export const seededRandom = (seed: number) => {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export const DEMO_WORKSPACE = "ws_demo"
export const DEMO_OWNER = "acc_demo_owner"
export const DEMO_VIEWER = "acc_demo_viewer"
export const DEMO_SURVEY = "srv_demo_feedback"

const iso = (millis: number) => new Date(millis).toISOString()

/** The demo workspace: every question type, a few hundred responses, no keys (those are minted at seed time). */
export const demoFixture = (now: number): FixtureInput => {
  const random = seededRandom(20261122)
  const pick = <A>(items: ReadonlyArray<A>): A => items[Math.floor(random() * items.length)]!
  const day = 86_400_000
  const start = now - 30 * day
  const questions = [
    { id: "q_demo_intro", type: "section" as const, label: "About you", order: 1 },
    { id: "q_demo_email", type: "email" as const, label: "Your email address", order: 2 },
    { id: "q_demo_country", type: "country" as const, label: "Where are you based?", order: 3, required: true },
    {
      id: "q_demo_role",
      type: "checkbox" as const,
      label: "What is your role?",
      order: 4,
      required: true,
      options: [
        { value: "engineering", label: "engineering" },
        { value: "product", label: "product" },
        { value: "design", label: "design" },
        { value: "support", label: "support" }
      ]
    },
    { id: "q_demo_product", type: "section" as const, label: "Our product", order: 5 },
    {
      id: "q_demo_nps",
      type: "scale" as const,
      label: "How likely are you to recommend us?",
      order: 6,
      required: true,
      options: Array.from({ length: 11 }, (_, i) => ({ value: String(i), label: String(i) }))
    },
    {
      id: "q_demo_features",
      type: "checkbox" as const,
      label: "Which features do you use?",
      order: 7,
      allowMultiple: true,
      options: [
        { value: "api", label: "api" },
        { value: "webhooks", label: "webhooks" },
        { value: "embeds", label: "embeds" },
        { value: "exports", label: "exports" }
      ]
    },
    {
      id: "q_demo_rank",
      type: "sort" as const,
      label: "Rank what matters most",
      order: 8,
      options: [
        { value: "speed", label: "speed" },
        { value: "price", label: "price" },
        { value: "support", label: "support" },
        { value: "docs", label: "docs" }
      ]
    },
    { id: "q_demo_seats", type: "number" as const, label: "How many seats does your team use?", order: 9 },
    { id: "q_demo_since", type: "calendar" as const, label: "When did you start using us?", order: 10 },
    {
      id: "q_demo_heatmap",
      type: "heatmap" as const,
      label: "Click where you look first on our dashboard",
      order: 11,
      settings: { imageUrl: "/assets/demo-dashboard.svg" }
    },
    { id: "q_demo_comment", type: "textarea" as const, label: "Anything else you want to tell us?", order: 12 }
  ]
  const countries = ["DE", "US", "FR", "GB", "JP", "BR", "IN", "NL", "SE", "CA"]
  const comments = [
    "Great API, the cursors just work.",
    "Webhooks were easy to verify.",
    "Please add more chart types, thanks",
    "=not a formula",
    "Support answered in an hour, \"impressive\".",
    "Docs could use more examples,\nespecially for embeds."
  ]
  const responses = Array.from({ length: 320 }, (_, i) => {
    const createdAt = start + Math.floor((i / 320) * 29 * day) + Math.floor(random() * 3_600_000)
    const completed = random() < 0.8
    const reached = completed ? questions.length : Math.floor(random() * questions.length)
    const answers: Array<{ questionId: string; values: Array<string> }> = []
    for (const q of questions.slice(0, reached)) {
      if (q.type === "section" || random() < 0.1) continue
      const values = ((): Array<string> => {
        switch (q.type) {
          case "email":
            return [`person${i}@example.com`]
          case "country":
            return [pick(countries)]
          case "checkbox": {
            const options = q.options ?? []
            if (q.allowMultiple !== true) return [pick(options).value]
            const chosen = options.filter(() => random() < 0.5).map((o) => o.value)
            return chosen.length > 0 ? chosen : [pick(options).value]
          }
          case "scale":
            return [String(Math.min(10, Math.floor(random() * 4) + (random() < 0.7 ? 7 : 2)))]
          case "sort": {
            const options = [...(q.options ?? [])].sort(() => random() - 0.5)
            return options.slice(0, 2 + Math.floor(random() * 3)).map((o) => o.value)
          }
          case "number":
            return [String(1 + Math.floor(random() * 200))]
          case "calendar":
            return [iso(start - Math.floor(random() * 700) * day).slice(0, 10)]
          case "heatmap":
            return [`${(random()).toFixed(4).replace(/0+$/, "").replace(/\.$/, "")},${(random()).toFixed(2)}`]
          case "textarea":
            return [pick(comments)]
        }
      })()
      answers.push({ questionId: q.id, values })
    }
    return {
      id: `rsp_demo_${String(i).padStart(4, "0")}`,
      surveyId: DEMO_SURVEY,
      externalUserId: i % 4 === 0 ? `user-${1000 + i}` : null,
      createdAt: iso(createdAt),
      completedAt: completed ? iso(createdAt + 60_000 + Math.floor(random() * 600_000)) : null,
      answers
    }
  })

  return {
    accounts: [{ id: DEMO_OWNER, planId: "pro" }, { id: DEMO_VIEWER, planId: "pro" }],
    workspaces: [{ id: DEMO_WORKSPACE, ownerAccountId: DEMO_OWNER }],
    members: [
      { workspaceId: DEMO_WORKSPACE, accountId: DEMO_OWNER, role: "owner" },
      { workspaceId: DEMO_WORKSPACE, accountId: DEMO_VIEWER, role: "viewer" }
    ],
    surveys: [
      {
        id: DEMO_SURVEY,
        workspaceId: DEMO_WORKSPACE,
        title: "Product feedback",
        description: "Tell us how the service works for your team.",
        status: "published",
        createdAt: iso(start - day),
        updatedAt: iso(start),
        questions
      },
      {
        id: "srv_demo_onboarding",
        workspaceId: DEMO_WORKSPACE,
        title: "Onboarding check-in",
        description: null,
        status: "draft",
        createdAt: iso(start - 2 * day),
        updatedAt: iso(start - 2 * day),
        questions: [
          { id: "q_demo_onb_1", type: "textarea", label: "What almost stopped you from signing up?", order: 1 },
          { id: "q_demo_onb_2", type: "scale", label: "How easy was setup?", order: 2, options: ["1", "2", "3", "4", "5"].map((v) => ({ value: v, label: v })) }
        ]
      },
      {
        id: "srv_demo_event",
        workspaceId: DEMO_WORKSPACE,
        title: "Conference 2026 follow-up",
        description: "Closed after the event.",
        status: "closed",
        createdAt: iso(start - 10 * day),
        updatedAt: iso(start - 3 * day),
        questions: [
          { id: "q_demo_evt_1", type: "scale", label: "Rate the talks", order: 1, options: ["1", "2", "3", "4", "5"].map((v) => ({ value: v, label: v })) }
        ]
      }
    ],
    responses
  }
}
