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

// The process's own scope is the first service of every context below it (its layers', its
// requests'), not merely one: each scope provided later takes its place. Measured shortcut
// (docs/architecture.md#the-scope-first-in-every-context).
run(process.argv).pipe(
  Effect.tapErrorCause(report),
  Effect.provide(BunContext.layer),
  Effect.scoped,
  BunRuntime.runMain({ disablePrettyLogger: true, disableErrorReporting: true })
)
