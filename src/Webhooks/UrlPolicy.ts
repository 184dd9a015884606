import { Context, Duration, Effect, Either } from "effect"
import { lookup } from "node:dns/promises"
import { isIPv4, isIPv6 } from "node:net"

/** One resolved address of a target host. */
export interface ResolvedAddress {
  readonly address: string
  readonly family: 4 | 6
}

/**
 * Name resolution for webhook targets. The live one asks the system resolver for every
 * A and AAAA record; tests swap it to prove that a second, different answer cannot be used.
 */
export class Resolver extends Context.Reference<Resolver>()("Webhooks/Resolver", {
  defaultValue: (): {
    readonly resolve: (host: string) => Effect.Effect<ReadonlyArray<ResolvedAddress>, string>
  } => ({
    resolve: (host) =>
      Effect.tryPromise({
        try: () => lookup(host, { all: true, verbatim: true }),
        catch: () => `could not resolve ${host}`
      }).pipe(
        Effect.map((answers) =>
          answers.flatMap((a): Array<ResolvedAddress> =>
            a.family === 4 || a.family === 6 ? [{ address: a.address, family: a.family }] : []
          )
        )
      )
  })
}) {}

/** How long a target's name may take to resolve before the target is refused. */
export const DNS_LOOKUP_TIMEOUT = Duration.seconds(5)

/**
 * The one answer to a target refused for where it points (a non-public address, a name that does
 * not resolve, or not in time): which of these it was would tell a client about the service's own
 * network and resolver. The reason is logged at debug level.
 */
export const TARGET_REFUSED = "targetUrl must be an https URL whose host resolves only to public addresses"

// ---------------------------------------------------------------------------------------------
// Address ranges (decisions §7)

const ipv4ToNumber = (address: string): number | undefined => {
  if (!isIPv4(address)) return undefined
  return address.split(".").reduce((acc, part) => acc * 256 + Number(part), 0)
}

const blockedV4: ReadonlyArray<readonly [string, number]> = [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4]
]

const inV4 = (value: number, base: string, bits: number): boolean => {
  const start = ipv4ToNumber(base) ?? 0
  const size = 2 ** (32 - bits)
  return value >= start && value < start + size
}

/** The eight 16-bit groups of an IPv6 address (with an embedded IPv4 tail expanded). */
export const ipv6Groups = (input: string): ReadonlyArray<number> | undefined => {
  const address = input.startsWith("[") && input.endsWith("]") ? input.slice(1, -1) : input
  if (!isIPv6(address)) return undefined
  let text = address.toLowerCase()
  const lastColon = text.lastIndexOf(":")
  const tail = text.slice(lastColon + 1)
  if (tail.includes(".")) {
    const v4 = ipv4ToNumber(tail)
    if (v4 === undefined) return undefined
    text = `${text.slice(0, lastColon + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`
  }
  const [head = "", rest] = text.split("::")
  const headGroups = head === "" ? [] : head.split(":")
  const restGroups = rest === undefined || rest === "" ? [] : rest.split(":")
  const missing = 8 - headGroups.length - restGroups.length
  const groups = rest === undefined
    ? headGroups
    : [...headGroups, ...Array.from({ length: missing }, () => "0"), ...restGroups]
  if (groups.length !== 8) return undefined
  return groups.map((g) => Number.parseInt(g, 16))
}

const prefixMatches = (groups: ReadonlyArray<number>, prefix: ReadonlyArray<number>, bits: number): boolean => {
  for (let i = 0; i < 8 && bits > 0; i++) {
    const take = Math.min(16, bits)
    const mask = (0xffff << (16 - take)) & 0xffff
    if (((groups[i] ?? 0) & mask) !== ((prefix[i] ?? 0) & mask)) return false
    bits -= take
  }
  return true
}

const blockedInsideGlobal: ReadonlyArray<readonly [ReadonlyArray<number>, number]> = [
  [[0x2001, 0], 32], // Teredo
  [[0x2001, 0x2, 0], 48], // benchmarking
  [[0x2001, 0xdb8], 32], // documentation
  [[0x2002], 16], // 6to4
  [[0x3fff, 0], 20] // documentation
]

/**
 * Whether an address may not be reached by a webhook: every special-purpose IPv4 range, and
 * for IPv6 everything outside 2000::/3 plus the special ranges inside it. Anything that is
 * not an IP address at all is refused too.
 */
export const isBlockedAddress = (address: string): boolean => {
  const v4 = ipv4ToNumber(address)
  if (v4 !== undefined) return blockedV4.some(([base, bits]) => inV4(v4, base, bits))
  const groups = ipv6Groups(address)
  if (groups === undefined) return true
  if (!prefixMatches(groups, [0x2000], 3)) return true
  return blockedInsideGlobal.some(([prefix, bits]) => prefixMatches(groups, prefix, bits))
}

// ---------------------------------------------------------------------------------------------
// Target URLs

/** A target URL that passed the syntactic rules; its host still has to resolve to allowed addresses. */
export interface Target {
  readonly url: URL
  /** The host name as written in the URL, without IPv6 brackets. */
  readonly hostname: string
  /** Set when the host is an IP literal: nothing to resolve. */
  readonly literal: ResolvedAddress | undefined
}

const hostLiteral = (hostname: string): ResolvedAddress | undefined => {
  if (isIPv4(hostname)) return { address: hostname, family: 4 }
  const bare = hostname.startsWith("[") ? hostname.slice(1, -1) : hostname
  return isIPv6(bare) ? { address: bare, family: 6 } : undefined
}

/**
 * The syntactic rules of decisions §7. WHATWG `URL` normalises decimal, octal, hex and
 * shortened IPv4 spellings before the checks, so `https://2130706433/` is 127.0.0.1.
 */
export const parseTarget = (input: string, allowPrivate: boolean): Either.Either<Target, string> => {
  if (input.length > 2048) return Either.left("targetUrl is longer than 2048 characters")
  if (/[\u0000-\u0020\u007f]/.test(input)) return Either.left("targetUrl contains spaces or control characters")
  let url: URL
  try {
    url = new URL(input)
  } catch {
    return Either.left("targetUrl is not an absolute URL")
  }
  if (url.protocol !== "https:" && !(allowPrivate && url.protocol === "http:")) {
    return Either.left("targetUrl must use https")
  }
  if (url.username !== "" || url.password !== "") return Either.left("targetUrl must not carry credentials")
  if (url.hostname === "") return Either.left("targetUrl has no host")
  // `URL` refuses ports above 65535 but keeps port 0, on which nothing can be reached.
  if (url.port === "0") return Either.left("targetUrl has port 0; use a port from 1 to 65535")
  if (url.hostname.includes("%")) return Either.left("targetUrl must not carry an IPv6 zone id")
  const literal = hostLiteral(url.hostname)
  if (literal !== undefined && !allowPrivate && isBlockedAddress(literal.address)) return Either.left(TARGET_REFUSED)
  if (literal === undefined && !allowPrivate && /^(localhost|.*\.localhost)\.?$/i.test(url.hostname)) {
    return Either.left(TARGET_REFUSED)
  }
  url.hash = ""
  const hostname = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname
  return Either.right({ url, hostname, literal })
}

/**
 * Resolves a target's host and checks every answer. The address returned is the one to connect
 * to: the caller must not resolve the name again. Every refusal fails with `TARGET_REFUSED`.
 * `lookupTimeout` bounds the lookup where nothing else does (a PUT: `DNS_LOOKUP_TIMEOUT`); a
 * delivery attempt leaves it out, its own deadline counting the lookup in.
 */
export const resolveTarget = (target: Target, allowPrivate: boolean, lookupTimeout?: Duration.Duration) =>
  Effect.gen(function*() {
    if (target.literal !== undefined) return target.literal
    const resolver = yield* Resolver
    const lookup = resolver.resolve(target.hostname)
    const answers = yield* lookupTimeout === undefined ? lookup : lookup.pipe(
      Effect.timeoutFail({
        duration: lookupTimeout,
        onTimeout: () => `no answer within ${Duration.format(lookupTimeout)}`
      })
    )
    const first = answers[0]
    if (first === undefined) return yield* Effect.fail("no address")
    if (!allowPrivate && answers.some((a) => isBlockedAddress(a.address))) {
      return yield* Effect.fail("a non-public address")
    }
    return first
  }).pipe(
    Effect.tapError((reason) =>
      Effect.logDebug("webhook target refused").pipe(Effect.annotateLogs({ host: target.hostname, reason }))
    ),
    Effect.mapError(() => TARGET_REFUSED)
  )
