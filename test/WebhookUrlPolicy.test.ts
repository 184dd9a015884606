import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, FastCheck as fc } from "effect"
import { isBlockedAddress, parseTarget, type ResolvedAddress, Resolver, resolveTarget } from "../src/Webhooks/UrlPolicy.js"

const refused = (url: string) => Either.isLeft(parseTarget(url, false))
const accepted = (url: string) => Either.isRight(parseTarget(url, false))

describe("isBlockedAddress", () => {
  it("blocks every special-purpose IPv4 range at both ends", () => {
    const ranges: ReadonlyArray<readonly [string, string]> = [
      ["0.0.0.0", "0.255.255.255"],
      ["10.0.0.0", "10.255.255.255"],
      ["100.64.0.0", "100.127.255.255"],
      ["127.0.0.0", "127.255.255.255"],
      ["169.254.0.0", "169.254.255.255"],
      ["172.16.0.0", "172.31.255.255"],
      ["192.0.0.0", "192.0.0.255"],
      ["192.0.2.0", "192.0.2.255"],
      ["192.88.99.0", "192.88.99.255"],
      ["192.168.0.0", "192.168.255.255"],
      ["198.18.0.0", "198.19.255.255"],
      ["198.51.100.0", "198.51.100.255"],
      ["203.0.113.0", "203.0.113.255"],
      ["224.0.0.0", "239.255.255.255"],
      ["240.0.0.0", "255.255.255.255"]
    ]
    for (const [first, last] of ranges) {
      expect(isBlockedAddress(first), first).toBe(true)
      expect(isBlockedAddress(last), last).toBe(true)
    }
  })

  it("allows public IPv4 addresses just outside the blocked ranges", () => {
    for (const address of ["1.1.1.1", "9.255.255.255", "11.0.0.0", "100.63.255.255", "100.128.0.0", "172.15.255.255",
      "172.32.0.0", "192.0.1.255", "192.0.3.0", "192.167.255.255", "192.169.0.0", "198.17.255.255", "198.20.0.0",
      "203.0.112.255", "203.0.114.0", "223.255.255.255", "93.184.216.34"]) {
      expect(isBlockedAddress(address), address).toBe(false)
    }
  })

  it("allows only global unicast IPv6 minus its special ranges", () => {
    for (const address of ["::", "::1", "::ffff:127.0.0.1", "::ffff:7f00:1", "::ffff:8.8.8.8", "::127.0.0.1",
      "64:ff9b::1.2.3.4", "64:ff9b:1::1", "100::1", "fc00::1", "fd12:3456::1", "fe80::1", "febf::1", "fec0::1",
      "ff02::1", "5f00::1", "2001::1", "2001:0:ffff::1", "2001:2::1", "2001:db8::1", "2002:7f00:1::1", "3fff::1",
      "3fff:fff::1", "1fff::1", "4000::1", "[::1]"]) {
      expect(isBlockedAddress(address), address).toBe(true)
    }
    for (const address of ["2606:4700:4700::1111", "2001:4860:4860::8888", "2a00:1450::1", "2001:1::1", "2001:3::1",
      "3fff:1000::1", "2003::1"]) {
      expect(isBlockedAddress(address), address).toBe(false)
    }
  })

  it("refuses what is not an address", () => {
    expect(isBlockedAddress("example.com")).toBe(true)
    expect(isBlockedAddress("")).toBe(true)
  })
})

describe("parseTarget", () => {
  it("accepts public https URLs and canonicalises them", () => {
    expect(accepted("https://hooks.example.com/in?x=1")).toBe(true)
    expect(accepted("https://93.184.216.34/in")).toBe(true)
    expect(accepted("https://[2606:4700:4700::1111]:8443/in")).toBe(true)
    const parsed = parseTarget("HTTPS://Hooks.Example.COM/in#frag", false)
    expect(Either.getOrThrow(parsed).url.href).toBe("https://hooks.example.com/in")
  })

  it("refuses http, credentials, zone ids, junk and loopback names", () => {
    for (const url of ["http://hooks.example.com/", "ftp://hooks.example.com/", "https://user:pw@hooks.example.com/",
      "https://user@hooks.example.com/", "https://[fe80::1%25eth0]/", "not a url", "", "/relative", "https://",
      "https://localhost/", "https://api.localhost/", "javascript:alert(1)", "https://exa mple.com/",
      `https://example.com/${"a".repeat(2100)}`]) {
      expect(refused(url), url).toBe(true)
    }
  })

  it("normalises decimal, octal, hex, shortened and IPv4-mapped spellings before checking", () => {
    for (const url of ["https://2130706433/", "https://0x7f000001/", "https://017700000001/", "https://0177.0.0.1/",
      "https://0x7f.0.0.1/", "https://127.1/", "https://127.0.1/", "https://0/", "https://0x0a000001/",
      "https://167772161/", "https://3232235521/", "https://0xA9FEA9FE/", "https://[::ffff:127.0.0.1]/",
      "https://[::ffff:7f00:1]/", "https://[::ffff:169.254.169.254]/", "https://[0:0:0:0:0:ffff:a00:1]/",
      "https://[::1]/", "https://[::]/", "https://169.254.169.254/latest/meta-data/", "https://[fd00::1]/"]) {
      expect(refused(url), url).toBe(true)
    }
  })

  it.prop("refuses every blocked IPv4 address however it is spelled", [
    fc.constantFrom<readonly [number, number]>(
      [0x0a000000, 8],
      [0x7f000000, 8],
      [0xa9fe0000, 16],
      [0xac100000, 12],
      [0xc0a80000, 16],
      [0x64400000, 10]
    ),
    fc.nat(),
    fc.constantFrom("decimal", "hex", "octal", "dotted-hex")
  ], ([[base, bits], offset, spelling]) => {
    const value = base + (offset % 2 ** (32 - bits))
    const bytes = [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255]
    const host = spelling === "decimal"
      ? String(value)
      : spelling === "hex"
      ? `0x${value.toString(16)}`
      : spelling === "octal"
      ? `0${value.toString(8)}`
      : bytes.map((b) => `0x${b.toString(16)}`).join(".")
    return refused(`https://${host}/hook`)
  })

  it.prop("accepts every port from 1 to 65535 and refuses port 0 and anything above, however written", [
    fc.integer({ min: 0, max: 70000 }),
    fc.nat({ max: 3 }),
    fc.boolean()
  ], ([port, zeros, allowPrivate]) => {
    const host = allowPrivate ? "http://127.0.0.1" : "https://hooks.example.com"
    const parsed = parseTarget(`${host}:${"0".repeat(zeros)}${port}/hook`, allowPrivate)
    return port >= 1 && port <= 65535 ? Either.isRight(parsed) : Either.isLeft(parsed)
  })

  it("allows http and private hosts only when private targets are allowed", () => {
    expect(Either.isRight(parseTarget("http://127.0.0.1:8080/hook", true))).toBe(true)
    expect(Either.isLeft(parseTarget("http://127.0.0.1:8080/hook", false))).toBe(true)
    expect(Either.isLeft(parseTarget("http://user:pw@127.0.0.1/hook", true))).toBe(true)
  })
})

const resolverOf = (answers: Record<string, ReadonlyArray<ResolvedAddress>>) => ({
  resolve: (host: string) => {
    const found = answers[host]
    return found === undefined ? Effect.fail(`could not resolve ${host}`) : Effect.succeed(found)
  }
})

describe("resolveTarget", () => {
  const target = (url: string) => Either.getOrThrow(parseTarget(url, false))

  it.effect("refuses a host when any of its addresses is not public", () =>
    Effect.gen(function*() {
      const resolver = resolverOf({
        "mixed.example": [{ address: "93.184.216.34", family: 4 }, { address: "10.0.0.7", family: 4 }],
        "v6.example": [{ address: "2606:4700::1", family: 6 }, { address: "::ffff:127.0.0.1", family: 6 }],
        "good.example": [{ address: "93.184.216.34", family: 4 }, { address: "2606:4700::1", family: 6 }]
      })
      const run = (url: string) =>
        Effect.either(resolveTarget(target(url), false).pipe(Effect.provideService(Resolver, resolver)))
      expect(Either.isLeft(yield* run("https://mixed.example/"))).toBe(true)
      expect(Either.isLeft(yield* run("https://v6.example/"))).toBe(true)
      expect(Either.isLeft(yield* run("https://unknown.example/"))).toBe(true)
      expect(yield* run("https://good.example/")).toEqual(Either.right({ address: "93.184.216.34", family: 4 }))
    }))
})
