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

/**
 * Measured shortcut: the process's own scope is the first service of every context below it (its
 * layers', its requests'), so each scope provided later takes its place, skipping Effect 3's walk
 * of the context up to the scope each time it checks whether a fiber's context changed. It changes
 * no behaviour. Measurement: docs/performance.md#measured-shortcuts, "The scope first in every
 * context".
 */
run(process.argv).pipe(
  Effect.tapErrorCause(report),
  Effect.provide(BunContext.layer),
  Effect.scoped,
  BunRuntime.runMain({ disablePrettyLogger: true, disableErrorReporting: true })
)
