import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { CurrentKey } from "./CurrentKey.js"

/** `GET /api/v1/key` (v1-extensions §X8): the authenticated key as the auth middleware decided it for this request. */
export const KeyLive = HttpApiBuilder.group(Api, "key", (handlers) =>
  Effect.succeed(handlers.handle("get", () =>
    Effect.map(CurrentKey, (key) => ({
      workspaceId: key.workspaceId,
      role: key.role,
      surveyIds: key.surveyIds === null ? null : [...key.surveyIds].sort()
    }))))
)
