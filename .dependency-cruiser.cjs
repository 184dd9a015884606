/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "database-behind-repositories",
      comment: "Only repositories (files named *Repo.ts, *Store.ts or *Sql.ts) and src/Sql import the database libraries.",
      severity: "error",
      from: { path: "^src/", pathNot: ["^src/Sql/", "(Repo|Store|Sql)\\.ts$"] },
      to: { path: ["^node_modules/(@effect/sql[^/]*|pg)/", "^bun:sqlite$", "^pg$"] }
    },
    {
      name: "sql-internals-behind-repositories",
      comment: "src/Sql's reader, row shapes, dialect and clients are for repositories; other code uses src/Sql's small services (transactions, the readiness probe) and error classification, and only src/App.ts, src/main.ts and the CLI compose the database layers.",
      severity: "error",
      from: { path: "^src/", pathNot: ["^src/Sql/", "(Repo|Store|Sql)\\.ts$", "^src/(App|main)\\.ts$", "^src/Cli/"] },
      to: { path: "^src/Sql/", pathNot: "^src/Sql/(Transactions|DatabaseReadiness|Busy)\\.ts$" }
    },
    {
      name: "database-drivers-in-clients",
      comment: "The database drivers are opened by src/Sql's clients (Sqlite, Postgres, PgServiceClient, ExportClient, the reader, the backup) and, for bun:sqlite, by the quota file and its migration; every other module goes through @effect/sql.",
      severity: "error",
      from: {
        path: "^src/",
        pathNot: [
          "^src/Sql/(Sqlite|Postgres|PgServiceClient|ExportClient|Reader|Backup)\\.ts$",
          "^src/Quota/QuotaFile(Sql|Store)\\.ts$",
          "^src/Sql/migrations/0013_quota_file\\.ts$"
        ]
      },
      to: { path: ["^node_modules/(@effect/sql-(pg|sqlite-bun)|pg)/", "^bun:sqlite$", "^pg$"] }
    },
    {
      name: "pg-client-class-behind-the-pool",
      comment: "The pg.Client subclass (src/Sql/PgServiceClient.ts) is the PostgreSQL pool's connection class and nothing else's.",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/Sql/(Postgres|PgServiceClient)\\.ts$" },
      to: { path: "^src/Sql/PgServiceClient\\.ts$" }
    },
    {
      name: "http-through-services",
      comment: "A feature's Http.ts maps requests onto its services and imports no repository (a row type aside): the read endpoints go through their features' read services (SurveyReads, QuestionReads, ResponseReads, AnalyticsReads), which hand out the repositories' functions.",
      severity: "error",
      from: { path: "^src/[^/]+/Http\\.ts$" },
      to: { path: "(Repo|Store|Sql)\\.ts$", dependencyTypesNot: ["type-only"] }
    },
    {
      name: "test-code-outside-src",
      comment: "What only tests use (counters in memory, a partial background, fixtures) lives under test/support; the service never imports it.",
      severity: "error",
      from: { path: "^src/" },
      to: { path: "^(test|scripts)/" }
    },
    {
      name: "services-through-their-feature",
      comment: "A service reaches another feature's rows through that feature's services, not its repository (a row type aside): the outbox through Events/Outbox, surveys through Surveys/SurveyReads, questions through Questions/QuestionReads, the stored analytics a deletion or an edit adjusts through Analytics/CounterAdjustments, the usage counters through Quota/UsageCounters; each runs in its caller's transaction. src/App.ts and src/main.ts compose the layers, the CLI and the operator's demo seeding write through repositories, and a repository may read another's row shape.",
      severity: "error",
      from: {
        path: "^src/([^/]+)/",
        pathNot: [
          "(Repo|Store|Sql)\\.ts$",
          "^src/(App|main)\\.ts$",
          "^src/(Cli|Demo|Sql)/"
        ]
      },
      to: {
        path: "^src/[^/]+/[^/]*(Repo|Store)\\.ts$",
        pathNot: "^src/$1/",
        dependencyTypesNot: ["type-only"]
      }
    },
    {
      name: "frozen-migrations",
      comment: "A migration is frozen: it imports nothing from feature code, only src/Sql's DDL and dialect helpers.",
      severity: "error",
      from: { path: "^src/Sql/migrations/" },
      to: { path: "^src/", pathNot: "^src/Sql/(Ddl|Dialect)\\.ts$" }
    },
    {
      name: "domain-imports-no-feature",
      comment: "src/Domain holds schemas and errors that every feature uses; it imports no feature.",
      severity: "error",
      from: { path: "^src/Domain/" },
      to: { path: "^src/", pathNot: "^src/Domain/" }
    },
    {
      name: "no-folder-cycles",
      comment: "No cycle between the folders of src.",
      severity: "error",
      from: { path: "^src/([^/]+)/" },
      to: { path: "^src/([^/]+)/", pathNot: "^src/$1/", circular: true }
    }
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" }
  }
}
