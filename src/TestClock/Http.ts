import { HttpApiBuilder, type HttpApp, HttpServerResponse } from "@effect/platform"
import { Clock, Duration, Effect } from "effect"
import { canWrite, CurrentKey } from "../Auth/CurrentKey.js"
import { Forbidden, InvalidRequest } from "../Domain/Errors.js"
import { parseIsoInstant, toIso } from "../Domain/Time.js"
import { ClockAdvance } from "./Advance.js"
import { TEST_CLOCK_HEADER, TestClockServiceApi } from "./Api.js"
import { SimulatedClock } from "./SimulatedClock.js"

/** The farthest one advance may move the clock. */
export const MAX_ADVANCE = Duration.days(400)

const invalid = (path: string, message: string) =>
  new InvalidRequest({ message: `Invalid \`${path === "" ? "body" : path}\`: ${message}.`, issues: [{ path, message }] })

const editorOnly = Effect.flatMap(CurrentKey, (key) =>
  canWrite(key)
    ? Effect.void
    : Effect.fail(new Forbidden({ message: "The test clock needs a key created by an editor or owner." })))

export const TestClockHttpLive = HttpApiBuilder.group(TestClockServiceApi, "testClock", (handlers) =>
  Effect.gen(function*() {
    const simulated = yield* SimulatedClock
    const advance = yield* ClockAdvance
    return handlers
      .handle("get", () =>
        Effect.zipRight(
          editorOnly,
          Effect.map(
            Effect.zip(Clock.currentTimeMillis, simulated.real.currentTimeMillis),
            ([now, realNow]) => ({ now: toIso(now), realNow: toIso(realNow) })
          )
        ))
      .handle("advance", ({ payload }) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          if ((payload.by === undefined) === (payload.to === undefined)) {
            return yield* invalid("", "send exactly one of `by` (an ISO 8601 duration) and `to` (an ISO instant)")
          }
          const path = payload.by === undefined ? "to" : "by"
          const target = payload.by === undefined ? (parseIsoInstant(payload.to ?? "") ?? now) : now + payload.by
          if (target < now) return yield* invalid(path, `must not be before now (${toIso(now)})`)
          if (target - now > Duration.toMillis(MAX_ADVANCE)) return yield* invalid(path, "moves the clock more than 400 days")
          const advanced = yield* advance.advanceTo(target)
          return { now: toIso(advanced.now), deliveryAttempts: advanced.deliveryAttempts, jobsRun: advanced.jobsRun }
        }))
  }))

/** Every answer of a process on a simulated clock carries the simulated time it was made at (v1-extensions §X5.1). */
export const withTestClockHeader = <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> =>
  Effect.flatMap(app, (response) =>
    Effect.map(Clock.currentTimeMillis, (now) => HttpServerResponse.setHeader(response, TEST_CLOCK_HEADER, toIso(now))))
