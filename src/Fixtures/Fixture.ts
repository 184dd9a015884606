import { Schema } from "effect"
import { boundedInt, boundedString } from "../Domain/Bounds.js"
import { StoredQuestionType } from "../Domain/Question.js"
import { MAX_EXTERNAL_USER_ID_LENGTH, MAX_TEXT_LENGTH, MAX_VALUES } from "../Domain/Response.js"
import { MAX_DESCRIPTION_LENGTH, MAX_TITLE_LENGTH, SurveyStatus } from "../Domain/Survey.js"
import { IsoInstant } from "../Domain/Time.js"

/**
 * The fixture file of `import FILE` (decisions §10). Every array is optional. Texts and positions
 * are held to the bounds the API declares for them, so that every stored survey and answer reads
 * back within its declared schema.
 */
const Id = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(128))

export const FixturePlan = Schema.Struct({
  id: Id,
  apiAccess: Schema.Boolean,
  burstLimit: Schema.Int.pipe(Schema.nonNegative()),
  burstWindowMinutes: Schema.Int.pipe(Schema.positive()),
  dailyLimit: Schema.Int.pipe(Schema.nonNegative()),
  monthlyLimit: Schema.Int.pipe(Schema.nonNegative())
})

export const FixtureOption = Schema.Struct({ value: Schema.String, label: Schema.String })

export const FixtureQuestion = Schema.Struct({
  id: Id,
  type: StoredQuestionType,
  label: Schema.String,
  required: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  allowMultiple: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  order: boundedInt(-(2 ** 31), 2 ** 31 - 1),
  options: Schema.optionalWith(Schema.Array(FixtureOption), { default: () => [] }),
  /** Presentation details for the respondent page, such as a heatmap's image URL. */
  settings: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.Unknown }), { default: () => ({}) }),
  /** A question deleted after answers were collected: kept for those answers, hidden from the API. */
  deleted: Schema.optionalWith(Schema.Boolean, { default: () => false })
})

export const FixtureSurvey = Schema.Struct({
  id: Id,
  workspaceId: Id,
  title: boundedString(MAX_TITLE_LENGTH),
  description: Schema.optionalWith(Schema.NullOr(boundedString(MAX_DESCRIPTION_LENGTH)), { default: () => null }),
  status: SurveyStatus,
  trashed: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  createdAt: IsoInstant,
  updatedAt: IsoInstant,
  questions: Schema.optionalWith(Schema.Array(FixtureQuestion), { default: () => [] })
})

export const FixtureResponse = Schema.Struct({
  id: Id,
  surveyId: Id,
  externalUserId: Schema.optionalWith(Schema.NullOr(boundedString(MAX_EXTERNAL_USER_ID_LENGTH)), {
    default: () => null
  }),
  createdAt: IsoInstant,
  completedAt: Schema.optionalWith(Schema.NullOr(IsoInstant), { default: () => null }),
  answers: Schema.optionalWith(
    Schema.Array(Schema.Struct({
      questionId: Id,
      values: Schema.Array(boundedString(MAX_TEXT_LENGTH)).pipe(Schema.maxItems(MAX_VALUES))
    })),
    { default: () => [] }
  )
})

export const Fixture = Schema.Struct({
  plans: Schema.optionalWith(Schema.Array(FixturePlan), { default: () => [] }),
  accounts: Schema.optionalWith(Schema.Array(Schema.Struct({ id: Id, planId: Id })), { default: () => [] }),
  workspaces: Schema.optionalWith(Schema.Array(Schema.Struct({ id: Id, ownerAccountId: Id })), {
    default: () => []
  }),
  members: Schema.optionalWith(
    Schema.Array(Schema.Struct({
      workspaceId: Id,
      accountId: Id,
      role: Schema.Literal("owner", "editor", "viewer")
    })),
    { default: () => [] }
  ),
  apiKeys: Schema.optionalWith(
    Schema.Array(Schema.Struct({
      token: Schema.String.pipe(Schema.minLength(8), Schema.maxLength(200), Schema.pattern(/^[A-Za-z0-9_-]+$/)),
      workspaceId: Id,
      createdBy: Id,
      surveyIds: Schema.optionalWith(Schema.NullOr(Schema.Array(Id)), { default: () => null }),
      revoked: Schema.optionalWith(Schema.Boolean, { default: () => false })
    })),
    { default: () => [] }
  ),
  surveys: Schema.optionalWith(Schema.Array(FixtureSurvey), { default: () => [] }),
  responses: Schema.optionalWith(Schema.Array(FixtureResponse), { default: () => [] })
})
export type Fixture = typeof Fixture.Type
export type FixtureInput = typeof Fixture.Encoded
