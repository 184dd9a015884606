import { defineConfig } from "vitest/config"

// The suite runs twice in one run: on SQLite (the default storage) and on PostgreSQL, which the
// test layers select when TEST_DATABASE=postgres (test/support/TestServer.ts) on a throwaway
// cluster started for the run (test/support/PostgresCluster.ts). One pass alone:
// `--project sqlite` or `--project postgres`.
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    maxWorkers: 2,
    reporters: ["default", "./test/support/SummaryReporter.ts"],
    projects: [
      { extends: true, test: { name: "sqlite" } },
      {
        extends: true,
        test: {
          name: "postgres",
          env: { TEST_DATABASE: "postgres" },
          globalSetup: ["./test/support/PostgresCluster.ts"]
        }
      }
    ]
  }
})
