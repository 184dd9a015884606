// A local OTLP/HTTP sink for `bench:read --otel`, in a process of its own so that the load
// generator (which blocks the bench's own process) never holds up the service's exports.
// Usage: bun scripts/bench/otlp-sink.ts PORT REPORT_FILE; on SIGTERM it writes
// {"exports": n, "bytes": n} to REPORT_FILE.
import { writeFileSync } from "node:fs"

const [port, report] = [Number(process.argv[2]), process.argv[3]]
if (!Number.isInteger(port) || report === undefined) throw new Error("usage: otlp-sink.ts PORT REPORT_FILE")
const counts = { exports: 0, bytes: 0 }
const server = Bun.serve({
  hostname: "127.0.0.1",
  port,
  async fetch(request) {
    counts.exports++
    counts.bytes += (await request.arrayBuffer()).byteLength
    return Response.json({})
  }
})
process.on("SIGTERM", () => {
  writeFileSync(report, JSON.stringify(counts))
  server.stop(true)
  process.exit(0)
})
