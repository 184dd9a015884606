import { type HttpServerRequest } from "@effect/platform"
import { Option } from "effect"
import { BlockList, isIP } from "node:net"

/**
 * An address as a peer or an `X-Forwarded-For` entry gives it, without what is not the address:
 * a port (`1.2.3.4:5678`, `[::1]:80`), brackets, an IPv6 zone (`%eth0`); an IPv4-mapped IPv6
 * address as its IPv4 address. Undefined when it is not an IP address.
 */
export const parseAddress = (text: string): string | undefined => {
  let value = text.trim()
  const bracketed = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(value)
  if (bracketed !== null) value = bracketed[1] ?? ""
  else {
    const withPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/.exec(value)
    if (withPort !== null) value = withPort[1] ?? ""
  }
  value = value.split("%")[0] ?? ""
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(value)?.[1]
  if (mapped !== undefined && isIP(mapped) === 4) return mapped
  const family = isIP(value)
  if (family === 4) return value
  return family === 6 ? value.toLowerCase() : undefined
}

/** The first four groups of an IPv6 address (its /64 network), expanded; undefined when it is not one. */
const ipv6Network = (address: string): string | undefined => {
  const [head = "", tail, extra] = address.split("::")
  if (extra !== undefined) return undefined
  const groups = (part: string | undefined) =>
    part === undefined || part === "" ? [] : part.split(":").flatMap((g) => g.includes(".") ? ["0", "0"] : [g])
  const left = groups(head)
  const right = groups(tail)
  const missing = 8 - left.length - right.length
  if (missing < 0 || (tail === undefined && missing !== 0)) return undefined
  const full = [...left, ...Array.from({ length: missing }, () => "0"), ...right]
  return full.slice(0, 4).map((g) => parseInt(g, 16).toString(16)).join(":")
}

/**
 * What a client address is counted by: an IPv4 address as it is, an IPv6 address by its /64
 * network, which one subscriber typically holds whole. Undefined when it is not an IP address.
 */
export const addressKey = (text: string): string | undefined => {
  const address = parseAddress(text)
  if (address === undefined || isIP(address) === 4) return address
  const network = ipv6Network(address)
  return network === undefined ? undefined : `${network}::/64`
}

/** The named networks `TRUST_PROXY` takes besides addresses and CIDR ranges. */
export const namedNetworks: Readonly<Record<string, ReadonlyArray<string>>> = {
  loopback: ["127.0.0.0/8", "::1/128"],
  private: ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "169.254.0.0/16", "fc00::/7", "fe80::/10"]
}

/** One network of `TRUST_PROXY`: `address/prefix` with the prefix in its family's range; undefined otherwise. */
export const parseNetwork = (text: string): string | undefined => {
  const [host = "", prefixText, extra] = text.trim().split("/")
  if (extra !== undefined) return undefined
  const address = isIP(host) === 0 ? undefined : parseAddress(host)
  if (address === undefined) return undefined
  const bits = isIP(address) === 4 ? 32 : 128
  if (prefixText === undefined) return `${address}/${bits}`
  const prefix = /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : Number.NaN
  return prefix >= 0 && prefix <= bits ? `${address}/${prefix}` : undefined
}

/** The peers whose forwarded headers are believed: the networks of `TRUST_PROXY`. */
export interface TrustedProxies {
  readonly trusts: (address: string) => boolean
  readonly none: boolean
}

/** The trusted proxies of a list of networks (`address/prefix`, as `parseNetwork` answers). */
export const trustedProxies = (networks: ReadonlyArray<string>): TrustedProxies => {
  const list = new BlockList()
  for (const network of networks) {
    const [address = "", prefix = ""] = network.split("/")
    list.addSubnet(address, Number(prefix), isIP(address) === 4 ? "ipv4" : "ipv6")
  }
  return {
    none: networks.length === 0,
    trusts: (address) => networks.length > 0 && list.check(address, isIP(address) === 4 ? "ipv4" : "ipv6")
  }
}

/**
 * The client's address, counted as `addressKey` says. From a peer that is not a trusted proxy:
 * the peer's own address, whatever it forwards. From a trusted proxy: `X-Forwarded-For` read from
 * the right, past every entry that is itself a trusted proxy; the first that is not is the client.
 * An entry that is not an IP address ends the walk at the proxy that appended it. When every
 * entry is a trusted proxy, the left-most one.
 */
export const clientAddress = (request: HttpServerRequest.HttpServerRequest, proxies: TrustedProxies): string | undefined => {
  const remote = Option.getOrUndefined(request.remoteAddress)
  const peer = remote === undefined ? undefined : parseAddress(remote)
  if (peer === undefined) return undefined
  if (proxies.none || !proxies.trusts(peer)) return addressKey(peer)
  const entries = (request.headers["x-forwarded-for"] ?? "").split(",")
  let current = peer
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i] ?? ""
    if (entry.trim() === "") continue
    const address = parseAddress(entry)
    if (address === undefined) break
    current = address
    if (!proxies.trusts(address)) break
  }
  return addressKey(current)
}
