/**
 * Measured shortcut: the bearer check on every request is a chain of effects (`Effect.flatMap`,
 * `Effect.map`), skipping the `Effect.gen` generator it would otherwise build per request. It makes
 * the same checks and fails with the same errors (test/Auth.test.ts). Measurement:
 * docs/performance.md#measured-shortcuts, "Chains of effects".
 */
import { HttpApiMiddleware, HttpApiSecurity } from "@effect/platform"
import { Context, Effect, Layer, Redacted, Schema } from "effect"
import { PlanUpgradeRequired, RateLimited, ServiceUnavailable, Unauthorized } from "../Domain/Errors.js"
import { ApiKeyRepo, type KeyLookup } from "./ApiKeyRepo.js"
import { type ApiKeyContext, CurrentKey } from "./CurrentKey.js"
import { hashToken } from "./Token.js"

/**
 * Bearer API key authentication for every `/api/v1` endpoint. Provides the current key;
 * fails with 401, or 403 `plan_upgrade_required` when the owner's plan lacks API access.
 * A request that passes the plan gate is counted against the quota (429, or 503 when the
 * count cannot be stored).
 */
export class Authorization extends HttpApiMiddleware.Tag<Authorization>()("Auth/Authorization", {
  failure: Schema.Union(Unauthorized.Wire, PlanUpgradeRequired.Wire, RateLimited.Wire, ServiceUnavailable.Wire),
  provides: CurrentKey,
  security: {
    bearer: HttpApiSecurity.bearer
  }
}) {}

/**
 * Whether a known key's request may go on: the request quota (`Quota/RateLimiter` provides it).
 * Declared here so that authentication does not depend on how the quota is kept.
 */
export class KeyAdmission extends Context.Tag("Auth/KeyAdmission")<KeyAdmission, {
  readonly admit: (key: ApiKeyContext) => Effect.Effect<void, RateLimited | ServiceUnavailable>
}>() {}

const tokenShape = /^[A-Za-z0-9_\-]{8,200}$/

export const AuthorizationLive = Layer.effect(
  Authorization,
  Effect.gen(function*() {
    const keys = yield* ApiKeyRepo
    const admission = yield* KeyAdmission
    // A chain of effects, not a generator: the measured shortcut of this file's header.
    const admitted = (
      found: KeyLookup
    ): Effect.Effect<ApiKeyContext, Unauthorized | PlanUpgradeRequired | RateLimited | ServiceUnavailable> => {
      switch (found._tag) {
        case "Unknown":
          return Effect.fail(new Unauthorized({ message: "The API key is not valid or has been revoked." }))
        case "NotMember":
          return Effect.fail(new Unauthorized({ message: "The API key's creator no longer has access to the workspace." }))
        case "NoApiAccess":
          return Effect.fail(
            new PlanUpgradeRequired({ message: "The workspace owner's plan does not include API access." })
          )
        case "Valid":
          return Effect.as(admission.admit(found.key), found.key)
      }
    }
    return {
      bearer: (token) =>
        Effect.suspend(() => {
          const raw = Redacted.value(token).trim()
          if (!tokenShape.test(raw)) {
            return Effect.fail(new Unauthorized({ message: "Send an API key as `Authorization: Bearer <API_KEY>`." }))
          }
          return Effect.flatMap(keys.lookup(hashToken(raw)), admitted)
        })
    }
  })
)
