import { Context } from "effect"
import type { SurveyId, WorkspaceId } from "../Domain/Ids.js"

export type Role = "owner" | "editor" | "viewer"

export interface QuotaPlan {
  readonly planId: string
  readonly burstLimit: number
  readonly burstWindowMinutes: number
  readonly dailyLimit: number
  readonly monthlyLimit: number
}

export interface ApiKeyContext {
  readonly keyId: string
  readonly workspaceId: WorkspaceId
  /** The account that created the key: its role decides writes, its plan decides the quota. */
  readonly accountId: string
  readonly role: Role
  /** Null when the key reaches every survey of the workspace. */
  readonly surveyIds: ReadonlySet<SurveyId> | null
  readonly quota: QuotaPlan
}

/** The authenticated key of the current request, provided by the auth middleware. */
export class CurrentKey extends Context.Tag("Auth/CurrentKey")<CurrentKey, ApiKeyContext>() {}

export const canWrite = (key: ApiKeyContext): boolean => key.role === "owner" || key.role === "editor"
