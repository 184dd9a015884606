import { Effect } from "effect"
import { createServer, connect, type Socket } from "node:net"

/**
 * A TCP proxy on 127.0.0.1 to `host`:`port`, for a network path that goes silent: while it does
 * not forward, it keeps every connection open and drops what either side sends, so that nothing
 * is answered and nothing is reset (a frozen server or a partitioned network, as a client sees
 * it). Closed, with its connections, when the scope closes.
 */
export const tcpProxy = (host: string, port: number) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ readonly port: number; readonly forward: (on: boolean) => void; readonly close: () => void }>((resolve) => {
        let forwarding = true
        const sockets = new Set<Socket>()
        const track = (socket: Socket) => {
          sockets.add(socket)
          socket.on("error", () => {})
          socket.on("close", () => sockets.delete(socket))
        }
        const server = createServer((client) => {
          const upstream = connect(port, host)
          track(client)
          track(upstream)
          client.on("data", (chunk) => {
            if (forwarding) upstream.write(chunk)
          })
          upstream.on("data", (chunk) => {
            if (forwarding) client.write(chunk)
          })
          client.on("close", () => upstream.destroy())
          upstream.on("close", () => client.destroy())
        })
        server.listen(0, "127.0.0.1", () => {
          const address = server.address()
          resolve({
            port: typeof address === "object" && address !== null ? address.port : 0,
            forward: (on) => {
              forwarding = on
            },
            close: () => {
              server.close()
              for (const socket of sockets) socket.destroy()
            }
          })
        })
      })
    ),
    (proxy) => Effect.sync(proxy.close)
  )
