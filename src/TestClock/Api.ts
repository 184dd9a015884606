import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { ParseResult, Schema } from "effect"
import { Api } from "../Api.js"
import { Authorization } from "../Auth/Authorization.js"
import { WriteAccess } from "../Auth/WriteAccess.js"
import { Forbidden, InvalidRequest } from "../Domain/Errors.js"
import { IsoInstant } from "../Domain/Time.js"
import { acceptsUnknownFields, JsonBody } from "../Http/JsonBody.js"
import { describeWireErrors, documentEveryAnswerHeader } from "../Http/OpenApiWire.js"

const units = { W: 7 * 86_400_000, D: 86_400_000, H: 3_600_000, M: 60_000, S: 1000 } as const
const isoDuration = /^P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:[.,]\d{1,3})?)S)?)?$/

/** Milliseconds of an ISO 8601 duration of weeks, days, hours, minutes and seconds; undefined otherwise. */
export const parseIsoDuration = (input: string): number | undefined => {
  const m = isoDuration.exec(input)
  if (m === null || input === "P" || input.endsWith("T")) return undefined
  const [, weeks, days, hours, minutes, seconds] = m
  return (Number(weeks ?? 0) * units.W) + (Number(days ?? 0) * units.D) + (Number(hours ?? 0) * units.H) +
    (Number(minutes ?? 0) * units.M) + Math.round(Number((seconds ?? "0").replace(",", ".")) * units.S)
}

/** An ISO 8601 duration, decoded to milliseconds. Years and months are refused: their length depends on the date. */
export const IsoDuration = Schema.transformOrFail(Schema.String, Schema.Number, {
  strict: true,
  decode: (input, _, ast) => {
    const millis = parseIsoDuration(input)
    return millis !== undefined
      ? ParseResult.succeed(millis)
      : ParseResult.fail(
        new ParseResult.Type(ast, input, "expected an ISO 8601 duration of weeks, days, hours, minutes or seconds, like PT5M or P5D")
      )
  },
  encode: (millis) => ParseResult.succeed(`PT${millis / 1000}S`)
}).annotations({ description: "ISO 8601 duration, for example PT5M or P5D" })

export const ClockReading = Schema.Struct({
  now: Schema.String.annotations({ description: "The simulated time: what the service stores and answers." }),
  realNow: Schema.String.annotations({ description: "The real time." })
}).annotations({ identifier: "TestClock", title: "TestClock" })

export const AdvanceRequest = Schema.Struct({
  by: Schema.optional(IsoDuration).annotations({ description: "How far to move the clock: an ISO 8601 duration." }),
  to: Schema.optional(IsoInstant).annotations({ description: "Where to move the clock: an instant not before now." })
}).annotations({
  identifier: "TestClockAdvance",
  description: "Exactly one of `by` and `to`; at most 400 days ahead.",
  ...acceptsUnknownFields
})

export const Advanced = Schema.Struct({
  now: Schema.String.annotations({ description: "The simulated time after the advance." }),
  deliveryAttempts: Schema.Int.annotations({ description: "Webhook delivery attempts made on the way." }),
  jobsRun: Schema.Int.annotations({ description: "Rounds of background jobs run on the way (delivery, aggregation, purges)." })
}).annotations({ identifier: "TestClockAdvanced" })

const readClock = HttpApiEndpoint.get("get", "/test/clock")
  .addSuccess(ClockReading)
  .addError(Forbidden.Wire)
  .annotate(OpenApi.Summary, "Read the simulated clock and the real one")

const advanceClock = HttpApiEndpoint.post("advance", "/test/clock/advance")
  .setPayload(AdvanceRequest)
  .addSuccess(Advanced)
  .addError(InvalidRequest.Wire)
  .addError(Forbidden.Wire)
  .annotate(OpenApi.Summary, "Move the simulated clock forward, running what falls due on the way")
  .annotate(
    OpenApi.Description,
    "Steps the clock to each instant where a webhook delivery attempt falls due and makes the attempts there " +
      "(for real, their retries scheduled from that instant), runs the background jobs that fall due, and answers " +
      "once the clock reached the new time."
  )

/** v1-extensions §X5.1: only on a process started with `--test-clock`. Editor keys of any workspace. */
export class TestClockApi extends HttpApiGroup.make("testClock").add(readClock).add(advanceClock)
  .middleware(JsonBody).middleware(WriteAccess).middleware(Authorization)
  .prefix("/api/v1")
  .annotate(OpenApi.Title, "Test clock")
  .annotate(OpenApi.Description, "The simulated clock of a process started with --test-clock.")
{}

/** The header every answer of a process on a simulated clock carries (v1-extensions §X5.1). */
export const TEST_CLOCK_HEADER = "Test-Clock"

const documentTestClockHeader = documentEveryAnswerHeader(TEST_CLOCK_HEADER, {
  description: "The simulated time when the answer was made (ISO 8601): this process runs on a test clock.",
  schema: { type: "string", format: "date-time" }
})

/** The API of a process on a simulated clock: the service's, with the test clock, each answer declaring its `Test-Clock` header. */
export const TestClockServiceApi = Api.add(TestClockApi)
  .annotate(OpenApi.Transform, (spec) => documentTestClockHeader(describeWireErrors(spec)))
