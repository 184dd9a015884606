import { Config, ConfigError, Context, Duration, Effect, Either, Layer, LogLevel, Option, Redacted } from "effect"
import { parseIsoInstant } from "./Domain/Time.js"
import { namedNetworks, parseNetwork } from "./Http/ClientAddress.js"

/** OpenTelemetry export over OTLP/HTTP (v1-extensions §X4); absent when no endpoint is configured. */
export interface TelemetrySettings {
  /** `OTEL_EXPORTER_OTLP_ENDPOINT`: the base URL; `/v1/traces` and `/v1/metrics` are appended. */
  readonly endpoint: string
  /** `OTEL_SERVICE_NAME` (default `survey-service`). */
  readonly serviceName: string
  /** `OTEL_EXPORTER_OTLP_HEADERS` (`name=value,...`, values URL-encoded): often a credential. */
  readonly headers: Redacted.Redacted<Readonly<Record<string, string>>>
  /** `OTEL_BSP_SCHEDULE_DELAY` in ms (default 5000): how long finished spans wait for export. */
  readonly spanExportDelay: Duration.Duration
  /** `OTEL_METRIC_EXPORT_INTERVAL` in ms (default 10000). */
  readonly metricExportInterval: Duration.Duration
  /** `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` (default 512): spans sent at once when that many are waiting. */
  readonly spanBatchSize: number
  /** `OTEL_EXPORTER_OTLP_TIMEOUT` in ms (default 10000): how long an export waits for the collector's answer. */
  readonly exportTimeout: Duration.Duration
}

/** The Prometheus listener (v1-extensions §X6); absent unless `METRICS_PORT` is set. */
export interface MetricsSettings {
  /** `METRICS_PORT`: the port of the second listener, which answers `GET /metrics`. */
  readonly port: number
  /** `METRICS_HOST` (default `127.0.0.1`): the address it listens on. */
  readonly host: string
}

export interface AppSettings {
  readonly port: number
  /** `HOST`: the address the server listens on (default `0.0.0.0`, every interface). */
  readonly host?: string
  readonly databasePath: string
  /**
   * `postgres://…` or `postgresql://…`: the service runs on that PostgreSQL database instead of
   * the SQLite file at `databasePath`. A secret (it may hold a password): never logged.
   */
  readonly databaseUrl?: Redacted.Redacted<string> | undefined
  /** PostgreSQL only: at most this many connections per process (default 10). */
  readonly databasePoolSize?: number
  /** PostgreSQL only: how long a statement waits for a connection before failing (default 5000 ms). */
  readonly databasePoolTimeoutMs?: number
  /** PostgreSQL only: the server's `statement_timeout` on every connection of the pool (default 30000 ms). */
  readonly databaseStatementTimeoutMs?: number
  readonly publicBaseUrl: string
  readonly webhookAllowPrivateTargets: boolean
  readonly logLevel: LogLevel.LogLevel
  readonly logFormat: "pretty" | "json"
  /** How long SQLite waits for another connection's lock before giving up (default 5000 ms). */
  readonly sqliteBusyTimeoutMs?: number
  /**
   * How long a process holds a webhook delivery or a background job before another process may
   * take it over (default 30 s; at most 60 s). A process renews its leases while it works.
   */
  readonly workerLeaseMillis?: number
  /** At most this many CSV exports stream at once in a process (default 4). */
  readonly exportConcurrency?: number
  /** At most this many CSV exports of one account (a key's creator) stream at once in a process (default 2). */
  readonly exportConcurrencyPerAccount?: number
  /** How long one page of a CSV export may take on PostgreSQL, its `statement_timeout` (default 10000 ms). */
  readonly exportPageTimeoutMs?: number
  /** Set when OpenTelemetry export is configured; without it nothing is traced or exported. */
  readonly telemetry?: TelemetrySettings
  /** Survey page loads and respondent saves per client address per minute (default 1000). */
  readonly respondentLimitPerAddress?: number
  /** Survey page loads and respondent saves per survey per minute (default 20000). */
  readonly respondentLimitPerSurvey?: number
  /**
   * The reverse proxies whose `X-Forwarded-For` is believed, as `address/prefix` networks (default
   * none: the client address is the connection's). TRUST_PROXY (src/Http/ClientAddress.ts).
   */
  readonly trustedProxies?: ReadonlyArray<string>
  /**
   * How many client addresses, surveys and survey-address pairs the respondent limits hold each in
   * memory before the least recently seen go (default 50000). RESPONDENT_LIMIT_ENTRIES.
   */
  readonly respondentLimitEntries?: number
  /** Set when `METRICS_PORT` is; without it no metrics listener runs and nothing of it is on the request path. */
  readonly metrics?: MetricsSettings
  /**
   * `TEST_CLOCK` (or `serve --test-clock [INSTANT]`): the process runs on a simulated clock starting at
   * this instant (epoch ms), or at the real time of the start for `now` (v1-extensions §X5.1).
   */
  readonly testClock?: number | "now"
}

/** The listen address when none is configured: every IPv4 interface. */
export const DEFAULT_HOST = "0.0.0.0"

/** HOST (or `--host`): an address or host name to listen on, not blank. */
const hostCheck = { message: "Expected an address or host name to listen on", validation: (host: string) => /^[^\s/]+$/.test(host) }

/** METRICS_PORT and METRICS_HOST; none when METRICS_PORT is unset or empty. */
const metricsConfig = Config.all({
  port: Config.string("METRICS_PORT").pipe(
    Config.withDefault(""),
    Config.mapOrFail((raw) => {
      const value = raw.trim()
      if (value === "") return Either.right(Option.none<number>())
      const port = /^\d{1,5}$/.test(value) ? Number(value) : Number.NaN
      return port >= 1 && port <= 65_535
        ? Either.right(Option.some(port))
        : Either.left(ConfigError.InvalidData(["METRICS_PORT"], "Expected a port number from 1 to 65535"))
    })
  ),
  host: Config.string("METRICS_HOST").pipe(Config.validate(hostCheck), Config.withDefault("127.0.0.1"))
}).pipe(Config.map(({ host, port }) => Option.map(port, (port): MetricsSettings => ({ port, host }))))

/** Respondent limits per minute when none are configured. */
export const DEFAULT_RESPONDENT_LIMITS = { perAddress: 1000, perSurvey: 20_000, entries: 50_000 } as const

const perMinuteCheck = {
  message: "Expected a whole number of requests per minute from 1 to 1000000",
  validation: (n: number) => n >= 1 && n <= 1_000_000
}

/**
 * TRUST_PROXY: the reverse proxies whose `X-Forwarded-For` is believed, a comma-separated list of
 * addresses, CIDR networks and the names `loopback` and `private`; `false`/`off`/`0`/empty
 * (default) for none. `true` (and a count of proxies, which earlier versions took) means
 * `loopback,private`: the proxies in front of a service sit on such networks.
 */
const trustProxyConfig = Config.string("TRUST_PROXY").pipe(
  Config.withDefault("false"),
  Config.mapOrFail((raw): Either.Either<ReadonlyArray<string>, ConfigError.ConfigError> => {
    const value = raw.trim().toLowerCase()
    if (value === "false" || value === "off" || value === "no" || value === "0" || value === "") return Either.right([])
    if (value === "true" || value === "on" || value === "yes" || /^([1-9]|10)$/.test(value)) {
      return Either.right([...namedNetworks["loopback"] ?? [], ...namedNetworks["private"] ?? []])
    }
    const networks: Array<string> = []
    for (const entry of value.split(",").map((e) => e.trim()).filter((e) => e !== "")) {
      const named = namedNetworks[entry]
      const network = named === undefined ? parseNetwork(entry) : undefined
      if (named !== undefined) networks.push(...named)
      else if (network !== undefined) networks.push(network)
      else {
        return Either.left(ConfigError.InvalidData(
          ["TRUST_PROXY"],
          `Expected false, true, or proxies' addresses and networks like 10.0.0.0/8, loopback, private; not ${entry}`
        ))
      }
    }
    return Either.right(networks)
  })
)

/** A simulated clock's start: `now` or an ISO instant with an offset; none when unset or empty. */
const testClockOf = (name: string, raw: string): Either.Either<Option.Option<number | "now">, ConfigError.ConfigError> => {
  const value = raw.trim()
  if (value === "") return Either.right(Option.none())
  if (value.toLowerCase() === "now") return Either.right(Option.some("now"))
  const at = parseIsoInstant(value)
  return at === undefined
    ? Either.left(ConfigError.InvalidData([name], "Expected now or an ISO 8601 instant with an offset, like 2026-01-31T12:00:00Z"))
    : Either.right(Option.some(at))
}

/** The lease of deliveries and background jobs when none is configured. */
export const DEFAULT_LEASE_MILLIS = 30_000

/** WORKER_LEASE_SECONDS: more than 0, at most 60 (v1-extensions §X3). */
const workerLeaseConfig = Config.number("WORKER_LEASE_SECONDS").pipe(
  Config.validate({ message: "Expected a number of seconds above 0 and at most 60", validation: (s) => s > 0 && s <= 60 }),
  Config.map((seconds) => Math.round(seconds * 1000)),
  Config.withDefault(DEFAULT_LEASE_MILLIS)
)

/** `name=value,name2=value2` with URL-encoded values, as the OpenTelemetry specification writes them. */
export const parseOtlpHeaders = (raw: string): Either.Either<Record<string, string>, string> => {
  const headers: Record<string, string> = {}
  for (const part of raw.split(",")) {
    if (part.trim() === "") continue
    const at = part.indexOf("=")
    const name = at === -1 ? "" : part.slice(0, at).trim().toLowerCase()
    if (!/^[a-z0-9!#$%&'*+.^_`|~-]+$/.test(name)) return Either.left("expected name=value pairs separated by commas")
    try {
      headers[name] = decodeURIComponent(part.slice(at + 1).trim())
    } catch {
      return Either.left(`the value of ${name} is not URL-encoded`)
    }
  }
  return Either.right(headers)
}

const millis = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.withDefault(fallback),
    Config.validate({ message: "Expected a positive number of milliseconds", validation: (n) => n > 0 }),
    Config.map(Duration.millis)
  )

/** The OTEL_* variables; none when `OTEL_EXPORTER_OTLP_ENDPOINT` is unset or empty. */
const telemetryConfig = Effect.gen(function*() {
  const endpoint = yield* Config.string("OTEL_EXPORTER_OTLP_ENDPOINT").pipe(
    Config.withDefault(""),
    Config.mapOrFail((raw) => {
      const url = raw.trim()
      return url === "" || /^https?:\/\/\S+$/.test(url)
        ? Either.right(url.replace(/\/+$/, ""))
        : Either.left(ConfigError.InvalidData(["OTEL_EXPORTER_OTLP_ENDPOINT"], "Expected an http(s) URL"))
    })
  )
  if (endpoint === "") return Option.none<TelemetrySettings>()
  const rest = yield* Config.all({
    serviceName: Config.string("OTEL_SERVICE_NAME").pipe(Config.withDefault("survey-service")),
    headers: Config.redacted("OTEL_EXPORTER_OTLP_HEADERS").pipe(
      Config.withDefault(Redacted.make("")),
      Config.mapOrFail((value) =>
        Either.mapBoth(parseOtlpHeaders(Redacted.value(value)), {
          onLeft: (message) => ConfigError.InvalidData(["OTEL_EXPORTER_OTLP_HEADERS"], message),
          onRight: (headers): Redacted.Redacted<Readonly<Record<string, string>>> => Redacted.make(headers)
        })
      )
    ),
    spanExportDelay: millis("OTEL_BSP_SCHEDULE_DELAY", 5000),
    metricExportInterval: millis("OTEL_METRIC_EXPORT_INTERVAL", 10_000),
    spanBatchSize: Config.integer("OTEL_BSP_MAX_EXPORT_BATCH_SIZE").pipe(
      Config.withDefault(512),
      Config.validate({ message: "Expected a whole number of spans from 1 to 100000", validation: (n) => n >= 1 && n <= 100_000 })
    ),
    exportTimeout: millis("OTEL_EXPORTER_OTLP_TIMEOUT", 10_000)
  })
  return Option.some<TelemetrySettings>({ endpoint, ...rest })
})

const levels: Record<string, LogLevel.LogLevel> = {
  all: LogLevel.All,
  trace: LogLevel.Trace,
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warn: LogLevel.Warning,
  warning: LogLevel.Warning,
  error: LogLevel.Error,
  fatal: LogLevel.Fatal,
  none: LogLevel.None,
  off: LogLevel.None
}

/** LOG_LEVEL, case-insensitive: trace, debug, info, warn, error, fatal or none. */
const logLevelConfig = Config.string("LOG_LEVEL").pipe(
  Config.withDefault("info"),
  Config.mapOrFail((raw) => {
    const level = levels[raw.trim().toLowerCase()]
    return level === undefined
      ? Either.left(ConfigError.InvalidData(["LOG_LEVEL"], `Expected one of ${Object.keys(levels).join(", ")}`))
      : Either.right(level)
  })
)

/**
 * Whether `raw` names a PostgreSQL database: a `postgres://` or `postgresql://` URL with a host.
 * The answer never repeats the URL, which may carry a password.
 */
export const checkDatabaseUrl = (raw: string): Either.Either<string, string> => {
  const trimmed = raw.trim()
  if (!/^postgres(ql)?:\/\//i.test(trimmed)) {
    return Either.left("DATABASE_URL must start with postgres:// or postgresql://")
  }
  try {
    const url = new URL(trimmed)
    if (url.hostname === "" && !url.searchParams.has("host")) return Either.left("DATABASE_URL names no host")
    return Either.right(trimmed)
  } catch {
    return Either.left("DATABASE_URL is not a valid URL")
  }
}

/** DATABASE_URL, or none when unset or empty (then SQLite at DATABASE_PATH). */
const databaseUrlConfig = Config.string("DATABASE_URL").pipe(
  Config.withDefault(""),
  Config.mapOrFail((raw) =>
    raw.trim() === ""
      ? Either.right(Option.none<string>())
      : Either.mapBoth(checkDatabaseUrl(raw), {
        onLeft: (message) => ConfigError.InvalidData(["DATABASE_URL"], message),
        onRight: Option.some
      })
  )
)

/**
 * DATABASE_POOL_SIZE, DATABASE_POOL_TIMEOUT_MS and DATABASE_STATEMENT_TIMEOUT_MS (or their flags):
 * whole numbers in a sensible range.
 */
const poolSizeCheck = { message: "Expected a whole number of connections from 1 to 1000", validation: (n: number) => n >= 1 && n <= 1000 }
const millisecondsCheck = {
  message: "Expected a whole number of milliseconds from 1 to 600000",
  validation: (n: number) => n >= 1 && n <= 600_000
}
/** EXPORT_CONCURRENCY and EXPORT_CONCURRENCY_PER_ACCOUNT. */
const exportsCheck = { message: "Expected a whole number of exports from 1 to 1000", validation: (n: number) => n >= 1 && n <= 1000 }

/** A flag's value, checked as its environment variable is. */
const checkedFlag = (flag: string, value: Option.Option<number>, check: { readonly message: string; readonly validation: (n: number) => boolean }) =>
  Option.isSome(value) && !check.validation(value.value)
    ? Effect.fail(ConfigError.InvalidData([flag], check.message))
    : Effect.succeed(value)

/** Settings read once from the environment; CLI flags override them. */
export class AppConfig extends Context.Tag("App/Config")<AppConfig, AppSettings>() {
  static readonly fromEnv = (overrides: {
    readonly port?: Option.Option<number>
    readonly host?: Option.Option<string>
    readonly databasePath?: Option.Option<string>
    readonly databaseUrl?: Option.Option<string>
    readonly databasePoolSize?: Option.Option<number>
    readonly databasePoolTimeoutMs?: Option.Option<number>
    readonly databaseStatementTimeoutMs?: Option.Option<number>
    /** `--test-clock [INSTANT]`: some (`now` when no instant is given) when the flag is present. */
    readonly testClock?: Option.Option<string>
  } = {}) =>
    Effect.gen(function*() {
      const envPort = yield* Config.port("PORT").pipe(Config.withDefault(8080))
      const port = Option.getOrElse(overrides.port ?? Option.none(), () => envPort)
      const envHost = yield* Config.string("HOST").pipe(Config.validate(hostCheck), Config.withDefault(DEFAULT_HOST))
      const flagHost = overrides.host ?? Option.none()
      if (Option.isSome(flagHost) && !hostCheck.validation(flagHost.value)) {
        return yield* Effect.fail(ConfigError.InvalidData(["--host"], hostCheck.message))
      }
      const host = Option.getOrElse(flagHost, () => envHost)
      const envDb = yield* Config.string("DATABASE_PATH").pipe(Config.withDefault("./data/survey.db"))
      const databasePath = Option.getOrElse(overrides.databasePath ?? Option.none(), () => envDb)
      const envUrl = yield* databaseUrlConfig
      const flagUrl = overrides.databaseUrl ?? Option.none()
      if (Option.isSome(flagUrl)) {
        const checked = checkDatabaseUrl(flagUrl.value)
        if (Either.isLeft(checked)) {
          return yield* Effect.fail(ConfigError.InvalidData(["--database-url"], checked.left.replace("DATABASE_URL", "--database-url")))
        }
      }
      const databaseUrl = Option.orElse(Option.map(flagUrl, (url) => url.trim()), () => envUrl)
      const envPoolSize = yield* Config.integer("DATABASE_POOL_SIZE").pipe(Config.validate(poolSizeCheck), Config.option)
      const poolSize = Option.orElse(
        yield* checkedFlag("--database-pool-size", overrides.databasePoolSize ?? Option.none(), poolSizeCheck),
        () => envPoolSize
      )
      const envPoolTimeout = yield* Config.integer("DATABASE_POOL_TIMEOUT_MS").pipe(Config.validate(millisecondsCheck), Config.option)
      const poolTimeout = Option.orElse(
        yield* checkedFlag("--database-pool-timeout-ms", overrides.databasePoolTimeoutMs ?? Option.none(), millisecondsCheck),
        () => envPoolTimeout
      )
      const envStatementTimeout = yield* Config.integer("DATABASE_STATEMENT_TIMEOUT_MS").pipe(
        Config.validate(millisecondsCheck),
        Config.option
      )
      const statementTimeout = Option.orElse(
        yield* checkedFlag("--database-statement-timeout-ms", overrides.databaseStatementTimeoutMs ?? Option.none(), millisecondsCheck),
        () => envStatementTimeout
      )
      const publicBaseUrl = yield* Config.string("PUBLIC_BASE_URL").pipe(
        Config.withDefault(`http://localhost:${port}`)
      )
      const webhookAllowPrivateTargets = yield* Config.boolean("WEBHOOK_ALLOW_PRIVATE_TARGETS").pipe(
        Config.withDefault(false)
      )
      const logLevel = yield* logLevelConfig
      const workerLeaseMillis = yield* workerLeaseConfig
      const exportConcurrency = yield* Config.integer("EXPORT_CONCURRENCY").pipe(Config.validate(exportsCheck), Config.option)
      const exportConcurrencyPerAccount = yield* Config.integer("EXPORT_CONCURRENCY_PER_ACCOUNT").pipe(
        Config.validate(exportsCheck),
        Config.option
      )
      const exportPageTimeout = yield* Config.integer("EXPORT_PAGE_TIMEOUT_MS").pipe(Config.validate(millisecondsCheck), Config.option)
      const logFormat = yield* Config.literal("pretty", "json")("LOG_FORMAT").pipe(
        Config.withDefault(process.stdout.isTTY ? "pretty" as const : "json" as const)
      )
      const telemetry = yield* telemetryConfig
      const respondentLimitPerAddress = yield* Config.integer("RESPONDENT_LIMIT_PER_ADDRESS").pipe(
        Config.withDefault(DEFAULT_RESPONDENT_LIMITS.perAddress),
        Config.validate(perMinuteCheck)
      )
      const respondentLimitPerSurvey = yield* Config.integer("RESPONDENT_LIMIT_PER_SURVEY").pipe(
        Config.withDefault(DEFAULT_RESPONDENT_LIMITS.perSurvey),
        Config.validate(perMinuteCheck)
      )
      const trustedProxies = yield* trustProxyConfig
      const respondentLimitEntries = yield* Config.integer("RESPONDENT_LIMIT_ENTRIES").pipe(
        Config.withDefault(DEFAULT_RESPONDENT_LIMITS.entries),
        Config.validate({
          message: "Expected a whole number of entries from 100 to 10000000",
          validation: (n: number) => n >= 100 && n <= 10_000_000
        })
      )
      const metrics = yield* metricsConfig
      const envTestClock = yield* Config.string("TEST_CLOCK").pipe(
        Config.withDefault(""),
        Config.mapOrFail((raw) => testClockOf("TEST_CLOCK", raw))
      )
      const flagTestClock = overrides.testClock ?? Option.none()
      const testClock = Option.isSome(flagTestClock)
        ? yield* Either.match(testClockOf("--test-clock", flagTestClock.value), {
          onLeft: Effect.fail,
          onRight: (start) => Effect.succeed(Option.orElseSome(start, (): number | "now" => "now"))
        })
        : envTestClock
      return {
        port,
        host,
        databasePath,
        databaseUrl: Option.getOrUndefined(Option.map(databaseUrl, Redacted.make)),
        ...(Option.isSome(poolSize) ? { databasePoolSize: poolSize.value } : {}),
        ...(Option.isSome(poolTimeout) ? { databasePoolTimeoutMs: poolTimeout.value } : {}),
        ...(Option.isSome(statementTimeout) ? { databaseStatementTimeoutMs: statementTimeout.value } : {}),
        publicBaseUrl: publicBaseUrl.replace(/\/+$/, ""),
        webhookAllowPrivateTargets,
        logLevel,
        logFormat,
        workerLeaseMillis,
        ...(Option.isSome(exportConcurrency) ? { exportConcurrency: exportConcurrency.value } : {}),
        ...(Option.isSome(exportConcurrencyPerAccount) ? { exportConcurrencyPerAccount: exportConcurrencyPerAccount.value } : {}),
        ...(Option.isSome(exportPageTimeout) ? { exportPageTimeoutMs: exportPageTimeout.value } : {}),

        respondentLimitPerAddress,
        respondentLimitPerSurvey,
        trustedProxies,
        respondentLimitEntries,
        ...(Option.isSome(telemetry) ? { telemetry: telemetry.value } : {}),
        ...(Option.isSome(metrics) ? { metrics: metrics.value } : {}),
        ...(Option.isSome(testClock) ? { testClock: testClock.value } : {})
      } satisfies AppSettings
    })

  static readonly layerFromEnv = (overrides?: Parameters<typeof AppConfig.fromEnv>[0]) =>
    Layer.effect(AppConfig, AppConfig.fromEnv(overrides))

  static readonly layerTest = (settings: Partial<AppSettings> = {}) =>
    Layer.succeed(AppConfig, {
      port: 0,
      databasePath: ":memory:",
      publicBaseUrl: "http://127.0.0.1:0",
      webhookAllowPrivateTargets: true,
      logLevel: LogLevel.Warning,
      logFormat: "json",
      ...settings
    })
}
