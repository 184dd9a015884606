import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { IdText } from "../Domain/Bounds.js"
import { ServiceUnavailable } from "../Domain/Errors.js"
import { Authorization } from "./Authorization.js"

/** v1-extensions §X8: what the calling key may do, decided at request time. */
export const KeyInfo = Schema.Struct({
  workspaceId: IdText.annotations({ description: "The workspace the key belongs to." }),
  role: Schema.Literal("owner", "editor", "viewer").annotations({
    description: "The current role of the key's creator in the workspace: owner and editor write, viewer reads."
  }),
  surveyIds: Schema.NullOr(Schema.Array(IdText)).annotations({
    description: "The surveys the key is limited to, sorted; null when it reaches every survey of the workspace."
  })
}).annotations({ identifier: "KeyInfo", title: "KeyInfo" })

export class KeyApi extends HttpApiGroup.make("key")
  .add(
    HttpApiEndpoint.get("get", "/key")
      .addSuccess(KeyInfo)
      .addError(ServiceUnavailable.Wire)
      .annotate(
        OpenApi.Description,
        "The workspace, role and survey limits of the key in `Authorization`, as they stand now: a member whose role " +
          "changed answers the new role at once. Any valid key may ask, a viewer's included; the call counts against the quota. " +
          "Never the token, its hash or the account that created it."
      )
      .annotate(OpenApi.Summary, "What the calling key may do")
  )
  .middleware(Authorization)
  .annotate(OpenApi.Title, "Key")
  .annotate(OpenApi.Description, "What the calling key may do: its workspace, role and survey limits.")
{}
