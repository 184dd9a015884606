import { ValidationError } from "@effect/cli"
import { BunContext, BunRuntime } from "@effect/platform-bun"
import { Cause, Console, Effect } from "effect"
import { run } from "./Cli/Commands.js"

/** A failed command prints one line to stderr and exits 1; usage errors were already printed with help. */
const report = (cause: Cause.Cause<unknown>) => {
  if (Cause.isInterruptedOnly(cause)) return Effect.void
  const error = Cause.squash(cause)
  if (ValidationError.isValidationError(error)) return Effect.void
  return Console.error(`error: ${error instanceof Error ? error.message : String(error)}`)
}

run(process.argv).pipe(
  Effect.tapErrorCause(report),
  Effect.provide(BunContext.layer),
  BunRuntime.runMain({ disablePrettyLogger: true, disableErrorReporting: true })
)
