import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { boundedString, MAX_ERROR_MESSAGE_LENGTH } from "./Bounds.js"

/** The most issues an `invalid_request` answer lists; the others are left out. */
export const MAX_ISSUES = 20

/** The longest `path` of an issue; a longer one is cut. */
export const MAX_ISSUE_PATH_LENGTH = 200

/** The longest `message` of an issue; a longer one is cut. */
export const MAX_ISSUE_MESSAGE_LENGTH = 300

/** One field-level problem inside an `invalid_request` answer. */
export const Issue = Schema.Struct({
  path: boundedString(MAX_ISSUE_PATH_LENGTH).annotations({
    description: "Where the problem is: a parameter or a dotted body path."
  }),
  message: boundedString(MAX_ISSUE_MESSAGE_LENGTH).annotations({ description: "What is wrong there, in one line." })
}).annotations({ identifier: "InvalidRequestIssue", description: "One field-level problem of an invalid_request answer." })
export type Issue = typeof Issue.Type

const ErrorMessage = boundedString(MAX_ERROR_MESSAGE_LENGTH).annotations({ description: "What went wrong, for a person." })

/** An error's message as the wire carries it: cut to its bound. */
const wireMessage = (message: string): string => message.slice(0, MAX_ERROR_MESSAGE_LENGTH)

/** An issue as the wire carries it: path and message cut to their bounds. */
const wireIssue = (issue: Issue): Issue =>
  issue.path.length <= MAX_ISSUE_PATH_LENGTH && issue.message.length <= MAX_ISSUE_MESSAGE_LENGTH
    ? issue
    : { path: issue.path.slice(0, MAX_ISSUE_PATH_LENGTH), message: issue.message.slice(0, MAX_ISSUE_MESSAGE_LENGTH) }

/**
 * An error's wire form (decisions §2): `{"code", "message"}` with the status of its code, no `_tag`.
 * Each error class carries its own as `Wire`, the schema its endpoints declare with `.addError`.
 */
const wire = <Code extends string, Self extends { readonly message: string }>(
  self: new(props: { readonly message: string }) => Self,
  code: Code,
  status: number,
  description: string
) =>
  Schema.transform(
    Schema.Struct({ code: Schema.Literal(code), message: ErrorMessage }),
    Schema.instanceOf(self),
    {
      strict: true,
      decode: ({ message }) => new self({ message }),
      encode: (error) => ({ code, message: wireMessage(error.message) })
    }
  ).annotations({
    ...HttpApiSchema.annotations({ status }),
    identifier: `Error_${code}`,
    description
  })

export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", {
  message: Schema.String
}) {
  static readonly Wire = wire(
    Unauthorized,
    "unauthorized",
    401,
    "The API key is missing, malformed, revoked, or its creator lost access to the workspace."
  )
}

export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", {
  message: Schema.String
}) {
  static readonly Wire = wire(
    Forbidden,
    "forbidden",
    403,
    "The key is valid but lacks the access this call needs."
  )
}

export class PlanUpgradeRequired extends Schema.TaggedError<PlanUpgradeRequired>()("PlanUpgradeRequired", {
  message: Schema.String
}) {
  static readonly Wire = wire(
    PlanUpgradeRequired,
    "plan_upgrade_required",
    403,
    "The workspace owner's plan does not include API access."
  )
}

export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", {
  message: Schema.String
}) {
  static readonly Wire = wire(
    NotFound,
    "not_found",
    404,
    "Nothing with that id is reachable with this key."
  )
}

export class PreconditionFailed extends Schema.TaggedError<PreconditionFailed>()("PreconditionFailed", {
  message: Schema.String
}) {
  static readonly Wire = wire(
    PreconditionFailed,
    "precondition_failed",
    412,
    "The If-Match header names a version of the survey that is no longer current; nothing changed."
  )
}

export class ServiceUnavailable extends Schema.TaggedError<ServiceUnavailable>()("ServiceUnavailable", {
  message: Schema.String
}) {
  static readonly Wire = wire(
    ServiceUnavailable,
    "service_unavailable",
    503,
    "The request could not be completed safely now; nothing changed and it may be retried."
  )
}

export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  message: Schema.String,
  retryAfterSeconds: Schema.Int
}) {
  static readonly Wire = Schema.transform(
    Schema.Struct({ code: Schema.Literal("rate_limited"), message: ErrorMessage }),
    Schema.typeSchema(RateLimited),
    {
      strict: true,
      // The wait travels in the Retry-After header, not in the body.
      decode: ({ message }) => new RateLimited({ message, retryAfterSeconds: 1 }),
      encode: (error) => ({ code: "rate_limited" as const, message: wireMessage(error.message) })
    }
  ).annotations({
    ...HttpApiSchema.annotations({ status: 429 }),
    identifier: "Error_rate_limited",
    description: "Too many requests; the Retry-After header says how many seconds to wait."
  })
}

export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", {
  message: Schema.String,
  issues: Schema.optional(Schema.Array(Issue))
}) {
  /** The wire form always carries `issues`, empty when no single field is at fault. */
  static readonly Wire = Schema.transform(
    Schema.Struct({
      code: Schema.Literal("invalid_request"),
      message: ErrorMessage,
      issues: Schema.Array(Issue).pipe(Schema.maxItems(MAX_ISSUES)).annotations({
        description: `The problems found, at most ${MAX_ISSUES}; empty when no single field is at fault.`
      })
    }),
    Schema.typeSchema(InvalidRequest),
    {
      strict: true,
      decode: ({ issues, message }) => new InvalidRequest({ message, issues }),
      encode: (error) => ({
        code: "invalid_request" as const,
        message: wireMessage(error.message),
        issues: (error.issues ?? []).slice(0, MAX_ISSUES).map(wireIssue)
      })
    }
  ).annotations({
    ...HttpApiSchema.annotations({ status: 400 }),
    identifier: "Error_invalid_request",
    description: "A parameter or the body is missing or malformed; retrying unchanged fails again."
  })
}
