import { FetchHttpClient, HttpClient, HttpClientRequest, type HttpClientResponse, HttpServer } from "@effect/platform"
import { BunHttpServer } from "@effect/platform-bun"
import { SqlClient, type SqlError } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted, Schema } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type CoreParts, makeCore, makeServe, type ServeParts } from "../../src/App.js"
import { AppConfig, type AppSettings } from "../../src/Config.js"
import type { FixtureInput } from "../../src/Fixtures/Fixture.js"
import { importFixtureInput } from "../../src/Fixtures/Import.js"
import { pgClientOptions } from "../../src/Sql/Postgres.js"
import { RecordedRounds } from "./Advance.js"
import { templateDatabase } from "./PostgresCluster.js"

/** Which database the test layers run on: `TEST_DATABASE=postgres` selects PostgreSQL (vitest.config.ts). */
export const testDatabase: "sqlite" | "postgres" = process.env.TEST_DATABASE === "postgres" ? "postgres" : "sqlite"

/** The throwaway cluster's base URL (test/support/PostgresCluster.ts), without a database name. */
export const postgresBaseUrl = (): string => {
  const url = process.env.TEST_POSTGRES_URL
  if (url === undefined || url === "") {
    throw new Error("TEST_DATABASE=postgres needs the cluster that test/support/PostgresCluster.ts starts")
  }
  return url
}

const onAdmin = (statement: string) =>
  Effect.flatMap(SqlClient.SqlClient, (admin) => admin.unsafe(statement)).pipe(
    Effect.provide(PgClient.layerFromPool(pgClientOptions(Redacted.make(`${postgresBaseUrl()}/postgres`)))),
    Effect.asVoid
  )

/** Creating a database that another layer created first is not a failure. */
const alreadyThere = (error: SqlError.SqlError) => {
  const cause = error.cause
  const code = typeof cause === "object" && cause !== null && "code" in cause ? cause.code : undefined
  return code === "42P04" || code === "23505"
}

let created = 0

/**
 * A PostgreSQL database copied from the migrated template. Named by `shared`, it is the same
 * database for every layer naming it (as two layers share one SQLite file) and is left for the
 * cluster's end; otherwise it is the test's own and dropped afterwards.
 */
export const postgresDatabase = (shared?: string, options: { readonly migrated: boolean } = { migrated: true }) =>
  Effect.gen(function*() {
    const name = shared !== undefined
      ? `s_${createHash("sha256").update(shared).digest("hex").slice(0, 24)}`
      : `t_${process.pid}_${++created}_${randomBytes(4).toString("hex")}`
    // Not migrated: an empty database (template0), for a test that migrates it step by step.
    yield* onAdmin(`CREATE DATABASE ${name} TEMPLATE ${options.migrated ? templateDatabase : "template0"}`).pipe(
      Effect.catchIf(alreadyThere, () => Effect.void)
    )
    if (shared === undefined) {
      yield* Effect.addFinalizer(() => onAdmin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).pipe(Effect.orDie))
    }
    return `${postgresBaseUrl()}/${name}`
  }).pipe(Effect.orDie)

/**
 * A database of its own, removed afterwards. On SQLite a file in a temporary directory: the
 * service's reads take a second connection to the file (src/Sql/Reader.ts), as in production.
 * On PostgreSQL a database of the test cluster; a `databasePath` then names a database shared
 * by every layer that names it. A `databaseUrl` given by the test is used as it is.
 */
export const TestConfig = (settings: Partial<AppSettings>) => {
  if (settings.databaseUrl !== undefined) return AppConfig.layerTest(settings)
  if (testDatabase === "postgres") {
    const shared = settings.databasePath === undefined || settings.databasePath === ":memory:"
      ? undefined
      : settings.databasePath
    return Layer.unwrapScoped(
      Effect.map(postgresDatabase(shared), (url) => AppConfig.layerTest({ ...settings, databaseUrl: Redacted.make(url) }))
    )
  }
  return settings.databasePath !== undefined
    ? AppConfig.layerTest(settings)
    : Layer.unwrapScoped(
      Effect.map(
        Effect.acquireRelease(
          Effect.sync(() => mkdtempSync(join(tmpdir(), "survey-test-"))),
          (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
        ),
        (dir) => AppConfig.layerTest({ ...settings, databasePath: join(dir, "survey.db") })
      )
    )
}

/** Parts of the production graph a test replaces (src/App.ts), and the test server itself. */
export interface TestParts extends Partial<CoreParts>, Partial<ServeParts> {
  /** The Bun server and the client pointed at it; `BunHttpServer.layerTest` unless given (`bunTestServer`). */
  readonly httpServer?: typeof BunHttpServer.layerTest
}

/** `BunHttpServer.layerTest` with server options of its own (an idle timeout). */
export const bunTestServer = (options: { readonly idleTimeout: number }) =>
  HttpServer.layerTestClient.pipe(
    Layer.provide(FetchHttpClient.layer.pipe(Layer.provide(Layer.succeed(FetchHttpClient.RequestInit, { keepalive: false })))),
    Layer.provideMerge(BunHttpServer.layer({ port: 0, idleTimeout: options.idleTimeout }))
  )

/**
 * The production core (database, repositories, services) over a database of its own, optionally
 * seeded with a fixture, with `parts` swapped in. Background loops report their rounds to the
 * recorder `advance` waits on (test/support/Advance.ts).
 */
export const TestDatabase = (fixture?: FixtureInput, settings: Partial<AppSettings> = {}, parts: TestParts = {}) => {
  const base = makeCore({ rounds: RecordedRounds, ...parts }).pipe(Layer.provideMerge(TestConfig(settings)))
  return fixture === undefined
    ? base
    : Layer.effectDiscard(importFixtureInput(fixture).pipe(Effect.orDie)).pipe(Layer.provideMerge(base))
}

/**
 * The production graph on a real Bun server on 127.0.0.1, with an `HttpClient` pointed at it.
 * Background work runs only when `parts.background` says which (tests drive the rest by hand).
 */
export const TestServer = (fixture?: FixtureInput, settings: Partial<AppSettings> = {}, parts: TestParts = {}) =>
  makeServe({ ...parts, background: parts.background ?? Layer.empty }).pipe(
    Layer.provideMerge(parts.httpServer ?? BunHttpServer.layerTest),
    Layer.provideMerge(TestDatabase(fixture, settings, parts))
  )

export interface Answered {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: unknown
  readonly text: string
}

/**
 * Decodes a value that came from outside the test (a parsed body, a JSON payload, a verified
 * webhook) with `schema`, throwing a readable ParseError when it does not match. Fields the
 * schema does not name are kept, so that assertions on the whole value still see all of it.
 */
export const decodeAs = <A, I>(schema: Schema.Schema<A, I>, value: unknown): A =>
  Schema.decodeUnknownSync(schema, { onExcessProperty: "preserve" })(value)

/** The parsed JSON body of an answer, decoded with `schema`. */
export const bodyOf = <A, I>(schema: Schema.Schema<A, I>, res: { readonly body: unknown }): A => decodeAs(schema, res.body)

/** `{ code }` of an error answer. */
export const ErrorCode = Schema.Struct({ code: Schema.String })

/** The whole body of an error answer (decisions §2). */
export const ErrorBody = Schema.Struct({
  code: Schema.String,
  message: Schema.String,
  issues: Schema.optional(Schema.Array(Schema.Struct({ path: Schema.String, message: Schema.String })))
})

const read = (response: HttpClientResponse.HttpClientResponse) =>
  Effect.map(response.text, (text): Answered => {
    let body: unknown = undefined
    try {
      body = text.length > 0 ? JSON.parse(text) : undefined
    } catch {
      body = undefined
    }
    return { status: response.status, headers: response.headers, body, text }
  })

/**
 * A raw request: any method, path, headers and body (sent as `application/json` unless the
 * headers say otherwise), answered with status, headers and parsed JSON.
 */
export const call = (
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "OPTIONS",
  path: string,
  options: { readonly token?: string; readonly headers?: Record<string, string>; readonly body?: string } = {}
) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    let request = HttpClientRequest.make(method)(path)
    if (options.token !== undefined) request = HttpClientRequest.bearerToken(request, options.token)
    if (options.body !== undefined) {
      request = HttpClientRequest.bodyText(request, options.body, "application/json")
    }
    // After the body, so that a test can send a body under any Content-Type.
    if (options.headers !== undefined) request = HttpClientRequest.setHeaders(request, options.headers)
    return yield* Effect.flatMap(client.execute(request), read)
  }).pipe(Effect.scoped, Effect.orDie)

export const get = (path: string, token?: string) => call("GET", path, token === undefined ? {} : { token })
