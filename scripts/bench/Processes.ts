/**
 * What the load benchmarks share about processes: wrk's presence, the servers they spawn (all
 * stopped on Ctrl-C or at the end), a free port on 127.0.0.1 and a process's CPU time. Imports
 * nothing, so a benchmark's own memory holds none of the service's code because of it.
 */
import { existsSync, readFileSync } from "node:fs"

/** Stops the benchmark with a clear message when wrk is not installed. */
export const requireWrk = (script: string) => {
  if (existsSync("/usr/bin/wrk")) return
  console.error(`${script} loads the servers with wrk: install it first (Debian: apt-get install wrk).`)
  process.exit(1)
}

/** The processes a benchmark spawned; `stopAll` kills them, and so does Ctrl-C. */
export const spawnedProcesses = () => {
  const children = new Set<ReturnType<typeof Bun.spawn>>()
  const stopAll = () => {
    for (const child of children) child.kill()
    children.clear()
  }
  process.on("SIGINT", () => {
    stopAll()
    process.exit(130)
  })
  return { children, stopAll }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A port on 127.0.0.1 that nothing listens on right now. */
export const freePort = () => {
  const probe = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() })
  const port = probe.port
  probe.stop(true)
  if (port === undefined) throw new Error("no free port")
  return port
}

/** User + system CPU time of a process so far, in microseconds (fields 14 and 15 of /proc/PID/stat). */
export const cpuTime = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /, "").split(" ")
  // After the command name, utime and stime are the 12th and 13th fields, in clock ticks (100 Hz).
  return (Number(fields[11]) + Number(fields[12])) * 10_000
}
