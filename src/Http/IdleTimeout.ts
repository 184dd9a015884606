import { Duration } from "effect"

/** Bun's own idle timeout, in seconds, when none is set. */
export const bunDefaultIdleTimeout = 10

/**
 * The HTTP server's idle timeout, in seconds, for requests that may wait in silence up to
 * `longestWait`. Bun closes a connection that sent and received nothing for its idle timeout
 * even while the handler is still working on the answer, and the client then gets no answer at
 * all. The longest silent wait of a request is a test event's attempt (`POST /webhooks/test`
 * waits up to the 15 s attempt timeout for the receiver), or a statement waiting out the
 * database's busy timeout; every other answer, the CSV export included, starts within those.
 * So the timeout is that wait plus a margin, never less than `floor` (Bun's default), and at
 * most Bun's limit of 255 s.
 */
export const idleTimeoutFor = (longestWait: Duration.DurationInput, floor: number = bunDefaultIdleTimeout): number =>
  Math.min(255, Math.max(floor, Math.ceil(Duration.toSeconds(Duration.decode(longestWait))) + 10))
