import { HttpApiMiddleware, HttpApiSecurity } from "@effect/platform"
import { Effect, Layer, Redacted, Schema } from "effect"
import {
  PlanUpgradeRequired,
  PlanUpgradeRequiredWire,
  RateLimitedWire,
  ServiceUnavailableWire,
  Unauthorized,
  UnauthorizedWire
} from "../Domain/Errors.js"
import { RateLimiter } from "../Quota/RateLimiter.js"
import { ApiKeyRepo } from "./ApiKeyRepo.js"
import { CurrentKey } from "./CurrentKey.js"
import { hashToken } from "./Token.js"

/**
 * Bearer API key authentication for every `/api/v1` endpoint. Provides the current key;
 * fails with 401, or 403 `plan_upgrade_required` when the owner's plan lacks API access.
 * A request that passes the plan gate is counted against the quota (429, or 503 when the
 * count cannot be stored).
 */
export class Authorization extends HttpApiMiddleware.Tag<Authorization>()("Auth/Authorization", {
  failure: Schema.Union(UnauthorizedWire, PlanUpgradeRequiredWire, RateLimitedWire, ServiceUnavailableWire),
  provides: CurrentKey,
  security: {
    bearer: HttpApiSecurity.bearer
  }
}) {}

const tokenShape = /^[A-Za-z0-9_\-]{8,200}$/

export const AuthorizationLive = Layer.effect(
  Authorization,
  Effect.gen(function*() {
    const keys = yield* ApiKeyRepo
    const limiter = yield* RateLimiter
    return {
      bearer: (token) =>
        Effect.gen(function*() {
          const raw = Redacted.value(token).trim()
          if (!tokenShape.test(raw)) {
            return yield* new Unauthorized({ message: "Send an API key as `Authorization: Bearer <API_KEY>`." })
          }
          const found = yield* keys.lookup(hashToken(raw))
          switch (found._tag) {
            case "Unknown":
              return yield* new Unauthorized({ message: "The API key is not valid or has been revoked." })
            case "NotMember":
              return yield* new Unauthorized({ message: "The API key's creator no longer has access to the workspace." })
            case "NoApiAccess":
              return yield* new PlanUpgradeRequired({
                message: "The workspace owner's plan does not include API access."
              })
            case "Valid":
              yield* limiter.admit(found.key)
              return found.key
          }
        })
    }
  })
)
