import { call, Usage } from "../api.js"
import { formatNumber, Show, useLoad, useSession, when } from "../common.js"

const nextMonth = (now: Date) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString()

const Gauge = (
  { id, label, used, limit, detail }: { readonly id: string; readonly label: string; readonly used: number | null; readonly limit: number; readonly detail: string }
) => (
  <div class="card gauge">
    <h2 id={id}>{label}</h2>
    {used === null
      ? <p class="big-number">{formatNumber(limit)} <span class="muted">requests allowed</span></p>
      : (
        <>
          <meter aria-labelledby={id} min={0} max={limit} low={limit * 0.75} high={limit * 0.9} optimum={0} value={used} />
          <p class="big-number">{formatNumber(used)} <span class="muted">of {formatNumber(limit)} used</span></p>
        </>
      )}
    <p class="muted">{detail}</p>
  </div>
)

/** The quota of the key's creator account, as `GET /usage` answers it. */
export const UsagePage = () => {
  const { key } = useSession()
  const { loaded, reload } = useLoad(() => call(key, "GET", "/usage", Usage).then((a) => a.body), [key])
  return (
    <>
      <div class="row">
        <h1>Usage</h1>
        <button type="button" onClick={() => void reload()}>Refresh</button>
      </div>
      <p>The request quota of the account that created this key, shared by all of its keys. Reading this page counts too.</p>
      <Show loaded={loaded}>
        {(u) => (
          <div class="gauges">
            <Gauge id="g-day" label="Today" used={u.usedToday} limit={u.dailyLimit} detail={`${formatNumber(u.remainingToday)} left; resets ${when(u.resetAt)}.`} />
            <Gauge
              id="g-burst"
              label="Burst"
              used={null}
              limit={u.burstLimit}
              detail={`In any ${u.burstWindowMinutes === 1 ? "minute" : `${u.burstWindowMinutes} minutes`}; each request frees its place ${u.burstWindowMinutes === 1 ? "a minute" : `${u.burstWindowMinutes} minutes`} later.`}
            />
            <Gauge id="g-month" label="This month" used={null} limit={u.monthlyLimit} detail={`Resets ${when(nextMonth(new Date(Date.parse(u.resetAt) - 1)))}.`} />
          </div>
        )}
      </Show>
    </>
  )
}
