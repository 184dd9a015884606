// A webhook receiver for the benchmark, in its own process so that it does not share the
// sender's thread: counts deliveries and the delay from each event's timestamp to its receipt,
// and keeps the response ids of the `response.completed` events it received (bench:chaos).
let latencies: Array<number> = []
const completed = new Set<string>()
const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    const url = new URL(request.url)
    if (request.method === "POST") {
      const body = await request.text()
      const match = /"timestamp":"([^"]+)"/.exec(body)
      const sent = match?.[1] === undefined ? Number.NaN : Date.parse(match[1])
      latencies.push(Date.now() - sent)
      const responseId = /"responseId":"([^"]+)"/.exec(body)?.[1]
      if (body.includes(`"type":"response.completed"`) && responseId !== undefined) completed.add(responseId)
      return new Response("ok")
    }
    if (url.pathname === "/count") return new Response(String(latencies.length))
    if (url.pathname === "/stats") return Response.json({ count: latencies.length, latencies })
    if (url.pathname === "/completed") return Response.json([...completed])
    if (url.pathname === "/completed/count") return new Response(String(completed.size))
    if (url.pathname === "/reset") {
      latencies = []
      completed.clear()
      return new Response("ok")
    }
    return new Response("not found", { status: 404 })
  }
})
console.log(server.port)
