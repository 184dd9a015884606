import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { column, rowShape } from "../Sql/Rows.js"

const NextRun = rowShape({ nextRunAt: column.num("next_run_at") })

/** The rows of `job_leases` (migration 0012): one per job, with its holder, its lease and its next period. */
export class JobLeaseStore extends Effect.Service<JobLeaseStore>()("Background/JobLeaseStore", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const ensure = (name: string) =>
      sql`INSERT INTO job_leases (name, holder, lease_until, next_run_at) VALUES (${name}, NULL, 0, 0)
          ON CONFLICT (name) DO NOTHING`

    /** Moves the next run of `name` to `nextRunAt` for `holder` if its period has come by `now`; true when it moved. */
    const claimPeriod = (name: string, holder: string, now: number, nextRunAt: number) =>
      Effect.zipRight(
        ensure(name),
        sql`UPDATE job_leases SET next_run_at = ${nextRunAt}, holder = ${holder}
          WHERE name = ${name} AND next_run_at <= ${now} RETURNING name`
      ).pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)

    /** Gives `holder` the lease of `name` until `leaseUntil` if it holds it or the lease lapsed by `now`; true when it did. */
    const hold = (name: string, holder: string, now: number, leaseUntil: number) =>
      Effect.zipRight(
        ensure(name),
        sql`UPDATE job_leases SET holder = ${holder}, lease_until = ${leaseUntil}
          WHERE name = ${name} AND (holder = ${holder} OR lease_until <= ${now}) RETURNING name`
      ).pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)

    /** Clears the lease of `name` if `holder` has it. */
    const release = (name: string, holder: string) =>
      sql`UPDATE job_leases SET holder = NULL, lease_until = 0 WHERE name = ${name} AND holder = ${holder}`.pipe(
        Effect.asVoid,
        Effect.orDie
      )

    /** When the next period of `name` starts (0 for a job that never ran). */
    const nextRunAt = (name: string) =>
      sql`SELECT ${sql.literal(NextRun.columns)} FROM job_leases WHERE name = ${name}`.values.pipe(
        Effect.map((rows) => rows[0] === undefined ? 0 : NextRun.at.nextRunAt(rows[0])),
        Effect.orDie
      )

    return { claimPeriod, hold, release, nextRunAt } as const
  })
}) {}
