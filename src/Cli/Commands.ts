import { SurveyId } from "../Domain/Ids.js"
import { Args, Command, Options } from "@effect/cli"
import { FileSystem } from "@effect/platform"
import { Console, Duration, Effect, Layer, Logger, LogLevel, Option, Schema } from "effect"
import { Aggregator, type RebuildBatch } from "../Analytics/Aggregator.js"
import { CoreFor, LoggingLive, ServerLive, TestClockServerLive } from "../App.js"
import { ApiKeyRepo } from "../Auth/ApiKeyRepo.js"
import { AppConfig } from "../Config.js"
import { exceedsJsonDepth, MAX_JSON_DEPTH } from "../Http/JsonBody.js"
import { backupSqlite } from "../Sql/Backup.js"
import { busyTimeoutMs } from "../Sql/Sqlite.js"
import { WorkBatches } from "../Sql/Transactions.js"
import { SurveyLifecycle } from "../Surveys/SurveyLifecycle.js"
import { clockMark } from "../TestClock/ClockMarkRepo.js"
import { SimulatedClock } from "../TestClock/SimulatedClock.js"
import { toIso } from "../Domain/Time.js"

/** Where the data lives: `--db` (SQLite file) or `--database-url` (PostgreSQL), over the environment. */
const db = Options.all({
  path: Options.text("db").pipe(
    Options.withDescription(
      "SQLite database file (overrides DATABASE_PATH); the request quota's counters are kept beside it in PATH-quota"
    ),
    Options.optional
  ),
  url: Options.text("database-url").pipe(
    Options.withDescription("PostgreSQL database, postgres://… (overrides DATABASE_URL; then --db is not used)"),
    Options.optional
  ),
  poolSize: Options.integer("database-pool-size").pipe(
    Options.withDescription("PostgreSQL connections per process, at most (overrides DATABASE_POOL_SIZE; default 10)"),
    Options.optional
  ),
  poolTimeoutMs: Options.integer("database-pool-timeout-ms").pipe(
    Options.withDescription(
      "How long a request waits for a PostgreSQL connection before answering 503 (overrides DATABASE_POOL_TIMEOUT_MS; default 5000)"
    ),
    Options.optional
  ),
  statementTimeoutMs: Options.integer("database-statement-timeout-ms").pipe(
    Options.withDescription(
      "How long PostgreSQL lets one statement run before it fails it and the request answers 503 (overrides DATABASE_STATEMENT_TIMEOUT_MS; default 30000)"
    ),
    Options.optional
  )
})
const port = Options.integer("port").pipe(Options.withDescription("Port to listen on (overrides PORT)"), Options.optional)
const host = Options.text("host").pipe(
  Options.withDescription("Address to listen on (overrides HOST; default 0.0.0.0)"),
  Options.optional
)

type Database = Command.Command.ParseConfig<{ readonly db: typeof db }>["db"]

/** The configuration's overrides from the database options. */
const databaseOverrides = (database: Database) => ({
  databasePath: database.path,
  databaseUrl: database.url,
  databasePoolSize: database.poolSize,
  databasePoolTimeoutMs: database.poolTimeoutMs,
  databaseStatementTimeoutMs: database.statementTimeoutMs
})

// The fixture importer and the demo data are loaded by the commands that use them: a serving
// process without `--demo` never evaluates them (docs/architecture.md#heap-bound).
const loadFixtures = Effect.promise(() => import("../Fixtures/Import.js"))
const loadDemo = Effect.promise(() => import("../Demo/Seed.js"))

/** Runs an operator command against the configured, migrated database. */
const withDatabase = <A, E, R>(
  database: Database,
  effect: Effect.Effect<A, E, R>
) =>
  Effect.gen(function*() {
    const settings = yield* AppConfig.fromEnv(databaseOverrides(database))
    return yield* effect.pipe(Effect.provide(CoreFor(settings)), Effect.provide(LoggingLive(settings)))
  })

const testClock = Options.boolean("test-clock").pipe(
  Options.withDescription(
    "Run on a simulated clock that stands still until POST /api/v1/test/clock/advance moves it, starting at INSTANT " +
      "(an ISO instant with an offset; default: now). For test runs only (overrides TEST_CLOCK)"
  )
)
const instant = Args.text({ name: "INSTANT" }).pipe(Args.optional)

const serve = Command.make("serve", { port, host, db, testClock, instant, demo: Options.boolean("demo").pipe(
  Options.withDescription("Seed the demo workspace when missing and print an editor and a viewer key")
) }, ({ db, demo, host, instant, port, testClock }) =>
  Effect.gen(function*() {
    if (!testClock && Option.isSome(instant)) {
      return yield* Effect.fail(new Error(`unexpected argument ${JSON.stringify(instant.value)}: INSTANT follows --test-clock`))
    }
    const settings = yield* AppConfig.fromEnv({
      port,
      host,
      ...databaseOverrides(db),
      testClock: testClock ? Option.orElseSome(instant, () => "now") : Option.none()
    })
    const startsAt = settings.testClock
    const real = yield* Effect.clock
    const simulated = startsAt === undefined
      ? undefined
      : SimulatedClock.make(startsAt === "now" ? yield* real.currentTimeMillis : startsAt, real)
    const program = Effect.gen(function*() {
      const mark = yield* clockMark
      yield* Effect.orDie(mark.markServed(simulated === undefined ? "real" : "simulated"))
      if (demo) {
        const { seedDemo } = yield* loadDemo
        const seed = yield* seedDemo()
        yield* Console.log([
          seed.seeded ? "Demo workspace seeded." : "Demo workspace already present; minted new keys.",
          `  editor key: ${seed.editorToken}`,
          `  viewer key: ${seed.viewerToken}`,
          `  try: curl -H "Authorization: Bearer ${seed.editorToken}" ${settings.publicBaseUrl}/api/v1/surveys`
        ].join("\n"))
      }
      return yield* Layer.launch(simulated === undefined ? ServerLive(settings) : TestClockServerLive(settings, simulated))
    })
    if (simulated === undefined) {
      return yield* program.pipe(
        Effect.provide(CoreFor(settings)),
        Effect.provide(LoggingLive(settings))
      )
    }
    // The whole process reads the simulated clock; what stays real reads `real` (SimulatedClock.layer).
    // The first line says so whatever the log level: TEST_CLOCK left in an environment must show.
    return yield* Effect.zipRight(
      Effect.logWarning(
        `clock simulated: the service's time is ${toIso(simulated.clock.unsafeCurrentTimeMillis())} and stands still ` +
          "until POST /api/v1/test/clock/advance moves it (for test runs only)"
      ).pipe(Logger.withMinimumLogLevel(LogLevel.All)),
      program.pipe(Effect.provide(CoreFor(settings)), Effect.provide(SimulatedClock.layer(simulated)))
    ).pipe(Effect.provide(LoggingLive(settings, real)), Effect.withClock(simulated.clock))
  })).pipe(Command.withDescription("Migrate the database, then serve the API and the survey pages"))

const migrate = Command.make("migrate", { db }, ({ db }) =>
  withDatabase(db, Console.log("Database migrated."))).pipe(Command.withDescription("Apply pending migrations"))

const importCommand = Command.make("import", { file: Args.file({ name: "FILE", exists: "yes" }), db }, ({ db, file }) =>
  withDatabase(
    db,
    Effect.gen(function*() {
      const { FixtureInvalid, importFixtureInput } = yield* loadFixtures
      const fs = yield* FileSystem.FileSystem
      const text = yield* fs.readFileString(file)
      if (exceedsJsonDepth(text)) {
        return yield* new FixtureInvalid({ message: `the fixture nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels` })
      }
      const json = yield* Schema.decodeUnknown(Schema.parseJson())(text)
      const summary = yield* importFixtureInput(json)
      yield* Console.log(
        `Imported ${summary.surveys} surveys, ${summary.questions} questions, ${summary.responses} responses, ` +
          `${summary.answers} answers, ${summary.apiKeys} keys.`
      )
    })
  )).pipe(Command.withDescription("Load a fixture file; idempotent by id"))

const keysCreate = Command.make("create", {
  workspace: Options.text("workspace").pipe(Options.withDescription("Workspace id")),
  account: Options.text("account").pipe(Options.withDescription("Creating account id (a workspace member)")),
  surveys: Options.text("surveys").pipe(
    Options.withDescription("Comma-separated survey ids the key is limited to"),
    Options.optional
  ),
  db
}, ({ account, db, surveys, workspace }) =>
  withDatabase(
    db,
    Effect.gen(function*() {
      const keys = yield* ApiKeyRepo
      const surveyIds = Option.match(surveys, {
        onNone: () => null,
        onSome: (list) => list.split(",").map((s) => s.trim()).filter((s) => s.length > 0)
      })
      const created = yield* keys.create({ workspaceId: workspace, accountId: account, surveyIds })
      yield* Console.log(created.token)
      yield* Console.error(`Key ${created.id} created; the token above is shown only once.`)
    })
  )).pipe(Command.withDescription("Create an API key and print its token once"))

const keysRevoke = Command.make("revoke", { key: Args.text({ name: "TOKEN_OR_ID" }), db }, ({ db, key }) =>
  withDatabase(
    db,
    Effect.gen(function*() {
      const revoked = yield* (yield* ApiKeyRepo).revoke(key)
      if (!revoked) return yield* Effect.fail(new Error("No live key matches."))
      yield* Console.log("Key revoked.")
    })
  )).pipe(Command.withDescription("Revoke an API key by token or id"))

const keys = Command.make("keys").pipe(Command.withSubcommands([keysCreate, keysRevoke]))

const lifecycle = (action: "publish" | "close" | "trash", description: string) =>
  Command.make(action, { id: Args.text({ name: "ID" }), db }, ({ db, id }) =>
    withDatabase(
      db,
      Effect.gen(function*() {
        const survey = yield* (yield* SurveyLifecycle).apply(SurveyId.make(id), action)
        yield* Console.log(action === "trash" ? `Survey ${survey.id} moved to the trash.` : `Survey ${survey.id}: ${action === "publish" ? "published" : "closed"}.`)
      })
    )).pipe(Command.withDescription(description))

const surveys = Command.make("surveys").pipe(Command.withSubcommands([
  lifecycle("publish", "Publish a draft or closed survey (emits survey.published)"),
  lifecycle("close", "Close a published survey (emits survey.closed)"),
  lifecycle("trash", "Move a survey to the trash")
]))

/**
 * A rebuild's progress on a terminal: one line rewritten in place every `progressEvery` batches
 * and at the end of each survey. Nothing when the output is not a terminal (a log, a pipe).
 */
const progressEvery = 20
const rebuildProgress = (tty: boolean) => {
  let batches = 0
  return (batch: RebuildBatch, survey?: { readonly index: number; readonly of: number }) =>
    Effect.sync(() => {
      batches += 1
      if (!tty || (!batch.done && batches % progressEvery !== 0)) return
      const of = survey === undefined ? "" : ` (survey ${survey.index} of ${survey.of})`
      process.stdout.write(`\r\u001b[2KRebuilding ${batch.surveyId}${of}: ${batch.passed} responses counted${batch.done ? ", done.\n" : "…"}`)
    })
}

/**
 * The command's pause before each batch (`Aggregator.rebuild`): as long as the last batch took,
 * at least `leastPauseMs` (a SQLite writer of another process, waiting for the lock, looks again
 * after pauses that grow to 100 ms), at most `mostPauseMs`. A serving process's background loop
 * moves the rebuild on meanwhile, and the command then only follows it; alone, it works at about
 * half the speed of batches back to back, `commandRebuildBatch` responses each.
 */
const leastPauseMs = 100
const mostPauseMs = 250
const commandRebuildBatch = 1000
const rebuildPause = () => {
  let since = performance.now()
  return Effect.suspend(() =>
    Effect.zipRight(
      Effect.sleep(Duration.millis(Math.min(mostPauseMs, Math.max(leastPauseMs, performance.now() - since)))),
      Effect.sync(() => {
        since = performance.now()
      })
    )
  )
}

const analyticsRebuild = Command.make("rebuild", {
  survey: Args.text({ name: "SURVEY_ID" }).pipe(Args.optional),
  db
}, ({ db, survey }) =>
  withDatabase(
    db,
    Effect.gen(function*() {
      const aggregator = yield* Aggregator
      const progress = rebuildProgress(process.stdout.isTTY === true)
      const pause = rebuildPause()
      const batches = yield* WorkBatches
      yield* Option.match(survey, {
        onNone: () =>
          Effect.flatMap(aggregator.rebuildAll((batch, index, of) => progress(batch, { index, of }), pause), (done) =>
            Console.log(`Rebuilt analytics of ${done.surveys} surveys from ${done.responses} responses.`)),
        onSome: (id) =>
          Effect.flatMap(aggregator.rebuildExisting(SurveyId.make(id), (batch) => progress(batch), pause), (responses) =>
            Console.log(`Rebuilt analytics of survey ${id} from ${responses} responses.`))
      }).pipe(Effect.provideService(WorkBatches, { ...batches, rebuild: commandRebuildBatch }))
    })
  )).pipe(Command.withDescription(
    "Recompute stored analytics from the responses (one survey, or all), in short batches beside a running server; " +
      "progress on a terminal"
  ))

const analytics = Command.make("analytics").pipe(Command.withSubcommands([analyticsRebuild]))

const backup = Command.make("backup", {
  file: Args.path({ name: "FILE" }),
  db: Options.text("db").pipe(
    Options.withDescription("SQLite database file to copy (overrides DATABASE_PATH); its quota file PATH-quota is copied to FILE-quota"),
    Options.optional
  )
}, ({ db, file }) =>
  Effect.gen(function*() {
    const settings = yield* AppConfig.fromEnv({ databasePath: db })
    if (settings.databaseUrl !== undefined) {
      return yield* Effect.fail(new Error("backup copies SQLite databases; with DATABASE_URL set, back up PostgreSQL with pg_dump (docs/deployment.md)"))
    }
    const report = yield* backupSqlite(settings.databasePath, file, busyTimeoutMs(settings))
    for (const copied of report.copies) {
      yield* Console.log(`Wrote ${copied.to} (${copied.bytes} bytes), a copy of ${copied.from}: integrity_check ok.`)
    }
    if (report.noQuotaFile) yield* Console.log(`No quota file beside ${settings.databasePath} (never served): none written.`)
    yield* Console.log(`Backup done in ${Math.round(Duration.toMillis(report.took))} ms.`)
  })).pipe(
    Command.withDescription(
      "Copy a live SQLite database and its quota file to FILE and FILE-quota (VACUUM INTO, then PRAGMA integrity_check); refuses an existing FILE"
    )
  )

export const cli = Command.make("survey-service").pipe(
  Command.withSubcommands([serve, migrate, importCommand, keys, surveys, analytics, backup])
)

export const run = Command.run(cli, { name: "survey-service", version: "0.1.0" })

