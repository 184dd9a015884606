/** UTC calendar arithmetic for the daily and monthly quota periods. */

const pad = (n: number, width: number) => String(n).padStart(width, "0")

/** `YYYY-MM-DD` of the UTC day holding `ms`. */
export const utcDay = (ms: number): string => {
  const d = new Date(ms)
  return `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)}`
}

/** `YYYY-MM` of the UTC month holding `ms`. */
export const utcMonth = (ms: number): string => utcDay(ms).slice(0, 7)

/** The next UTC midnight after `ms`. */
export const nextUtcMidnight = (ms: number): number => {
  const d = new Date(ms)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1)
}

/** The first instant of the UTC month after the one holding `ms`. */
export const nextUtcMonthStart = (ms: number): number => {
  const d = new Date(ms)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)
}

/** Whole seconds from `now` until `at`, rounded up. */
export const secondsUntil = (now: number, at: number): number => Math.max(0, Math.ceil((at - now) / 1000))
