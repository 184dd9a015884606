import { BunHttpServer } from "@effect/platform-bun"
import { Layer, Logger } from "effect"
import { AggregatorLive } from "./Analytics/Aggregator.js"
import { ApiKeyRepo } from "./Auth/ApiKeyRepo.js"
import type { AppSettings } from "./Config.js"
import { Outbox } from "./Events/Outbox.js"
import { withRequestId } from "./Http/RequestId.js"
import { MAX_REQUEST_BODY_BYTES } from "./Http/RequestErrors.js"
import { HttpLive } from "./Http/Server.js"
import { RateLimiter } from "./Quota/RateLimiter.js"
import { RespondentPurgeLive } from "./Respondents/RespondentPurge.js"
import { SqlLive } from "./Sql/Database.js"
import { MigrationsLive } from "./Sql/Migrations.js"
import { SurveyLifecycle } from "./Surveys/SurveyLifecycle.js"
import { WebhookWorkersLive } from "./Webhooks/Workers.js"

/** The SQLite database, migrated. Needs `AppConfig`. */
export const DatabaseLive = MigrationsLive.pipe(Layer.provideMerge(SqlLive))

/** Services the operator commands use beside the database. */
export const OperatorServices = Layer.mergeAll(ApiKeyRepo.Default, SurveyLifecycle.Default, Outbox.Default)

/** The HTTP server and its background work. Needs the database and `AppConfig`. */
export const ServerLive = (settings: AppSettings) =>
  HttpLive.pipe(
    Layer.provide(RateLimiter.Live),
    Layer.provide(BunHttpServer.layer({
      port: settings.port,
      hostname: "0.0.0.0",
      maxRequestBodySize: MAX_REQUEST_BODY_BYTES
    })),
    Layer.merge(RespondentPurgeLive),
    Layer.merge(AggregatorLive),
    Layer.merge(WebhookWorkersLive)
  )

/** Logging as configured: level and format (pretty on a TTY, JSON otherwise). */
export const LoggingLive = (settings: AppSettings) =>
  Layer.mergeAll(
    Logger.replace(
      Logger.defaultLogger,
      withRequestId(settings.logFormat === "json" ? Logger.withConsoleLog(Logger.jsonLogger) : Logger.prettyLogger())
    ),
    Logger.minimumLogLevel(settings.logLevel)
  )

