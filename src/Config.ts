import { Config, ConfigError, Context, Effect, Either, Layer, LogLevel, Option } from "effect"

export interface AppSettings {
  readonly port: number
  readonly databasePath: string
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
}

/** The lease of deliveries and background jobs when none is configured. */
export const DEFAULT_LEASE_MILLIS = 30_000

/** WORKER_LEASE_SECONDS: more than 0, at most 60 (v1-extensions §X3). */
const workerLeaseConfig = Config.number("WORKER_LEASE_SECONDS").pipe(
  Config.validate({ message: "Expected a number of seconds above 0 and at most 60", validation: (s) => s > 0 && s <= 60 }),
  Config.map((seconds) => Math.round(seconds * 1000)),
  Config.withDefault(DEFAULT_LEASE_MILLIS)
)

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

/** Settings read once from the environment; CLI flags override them. */
export class AppConfig extends Context.Tag("App/Config")<AppConfig, AppSettings>() {
  static readonly fromEnv = (overrides: {
    readonly port?: Option.Option<number>
    readonly databasePath?: Option.Option<string>
  } = {}) =>
    Effect.gen(function*() {
      const envPort = yield* Config.port("PORT").pipe(Config.withDefault(8080))
      const port = Option.getOrElse(overrides.port ?? Option.none(), () => envPort)
      const envDb = yield* Config.string("DATABASE_PATH").pipe(Config.withDefault("./data/survey.db"))
      const databasePath = Option.getOrElse(overrides.databasePath ?? Option.none(), () => envDb)
      const publicBaseUrl = yield* Config.string("PUBLIC_BASE_URL").pipe(
        Config.withDefault(`http://localhost:${port}`)
      )
      const webhookAllowPrivateTargets = yield* Config.boolean("WEBHOOK_ALLOW_PRIVATE_TARGETS").pipe(
        Config.withDefault(false)
      )
      const logLevel = yield* logLevelConfig
      const workerLeaseMillis = yield* workerLeaseConfig
      const logFormat = yield* Config.literal("pretty", "json")("LOG_FORMAT").pipe(
        Config.withDefault(process.stdout.isTTY ? "pretty" as const : "json" as const)
      )
      return {
        port,
        databasePath,
        publicBaseUrl: publicBaseUrl.replace(/\/+$/, ""),
        webhookAllowPrivateTargets,
        logLevel,
        logFormat,
        workerLeaseMillis
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
