import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { CurrentKey } from "../Auth/CurrentKey.js"
import { Forbidden } from "../Domain/Errors.js"
import { ResponseDeletion } from "./ResponseDeletion.js"

export const ErasuresLive = HttpApiBuilder.group(Api, "erasures", (handlers) =>
  Effect.gen(function*() {
    const deletion = yield* ResponseDeletion
    return handlers.handle("create", ({ payload }) =>
      Effect.gen(function*() {
        const key = yield* CurrentKey
        if (key.surveyIds !== null) {
          return yield* new Forbidden({ message: "This API key is limited to specific surveys; erasures need a workspace key." })
        }
        const deletedResponses = yield* deletion.erase({
          workspaceId: key.workspaceId,
          externalUserId: payload.externalUserId
        })
        return { externalUserId: payload.externalUserId, deletedResponses }
      }))
  })
)
