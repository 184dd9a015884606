import { execFileSync } from "node:child_process"
import { existsSync, readdirSync } from "node:fs"
import { join } from "node:path"
import { defineConfig } from "vitest/config"

// The suite runs twice in one run: on SQLite (the default storage) and on PostgreSQL, which the
// test layers select when TEST_DATABASE=postgres (test/support/TestServer.ts) on a throwaway
// cluster started for the run (test/support/PostgresCluster.ts). One pass alone:
// `--project sqlite` or `--project postgres`. A machine without PostgreSQL's binaries runs the SQLite
// pass and says so; CI (CI=true) installs them and always runs both.
const postgresRoot = "/usr/lib/postgresql"
const hasPostgres = process.env.PG_BIN !== undefined ||
  (existsSync(postgresRoot) && readdirSync(postgresRoot).some((v) => existsSync(join(postgresRoot, v, "bin", "initdb"))))
const withPostgres = hasPostgres || process.env.CI === "true"
if (!withPostgres) {
  console.warn("Skipping the PostgreSQL pass: no initdb under /usr/lib/postgresql (apt-get install postgresql, or set PG_BIN).")
}

// The console's front end is built first: the server serves it from the module the build writes
// (scripts/build-console.ts).
// Once a run: the configuration is read again for each project.
if (process.env.CONSOLE_BUILT !== "1") {
  execFileSync(process.execPath, [join(import.meta.dirname, "scripts/build-console.ts")], { stdio: "inherit" })
  process.env.CONSOLE_BUILT = "1"
}

export default defineConfig({
  // Bun resolves this name through tsconfig `paths` and imports the file as a path (src/Http/DocsPage.ts).
  resolve: { alias: { "#scalar-module": join(import.meta.dirname, "test/support/ScalarModulePath.ts") } },
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    maxWorkers: 2,
    reporters: ["default", "./test/support/SummaryReporter.ts"],
    projects: [
      { extends: true, test: { name: "sqlite" } },
      ...(withPostgres
        ? [{
          extends: true as const,
          test: {
            name: "postgres",
            env: { TEST_DATABASE: "postgres" },
            globalSetup: ["./test/support/PostgresCluster.ts"]
          }
        }]
        : [])
    ]
  }
})
