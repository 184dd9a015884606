/**
 * The respondent limits' state, in process memory (src/Respondents/RespondentLimits.ts): per key,
 * one number, in a table of a fixed number of entries.
 */

/** A map of at most `capacity` entries: when a new key comes to a full table, the least recently used goes. */
export class BoundedTable<V> {
  readonly #entries = new Map<string, V>()
  constructor(readonly capacity: number) {}

  get size(): number {
    return this.#entries.size
  }

  /** The value at `key`, which becomes the most recently used. */
  get(key: string): V | undefined {
    const value = this.#entries.get(key)
    if (value !== undefined) {
      this.#entries.delete(key)
      this.#entries.set(key, value)
    }
    return value
  }

  set(key: string, value: V): void {
    this.#entries.delete(key)
    this.#entries.set(key, value)
    if (this.#entries.size > this.capacity) {
      const oldest = this.#entries.keys().next()
      if (oldest.done !== true) this.#entries.delete(oldest.value)
    }
  }

  /** Deletes the entries `stale` answers true for; answers how many went. */
  sweep(stale: (value: V) => boolean): number {
    let removed = 0
    for (const [key, value] of this.#entries) {
      if (stale(value)) removed += Number(this.#entries.delete(key))
    }
    return removed
  }
}

/** The window of a per-minute limit. */
export const WINDOW_MS = 60_000

/**
 * Where a key's allowance stands at `now`: whole (`now`) or whole again at `fullAt`. An admitted
 * request never sets it more than a window ahead, so an instant further ahead means the clock
 * stepped back since: the key starts whole again rather than waiting out the step.
 */
const startOf = (fullAt: number | undefined, now: number): number =>
  fullAt === undefined || fullAt > now + WINDOW_MS ? now : Math.max(fullAt, now)

/**
 * A limit of `limit` requests a minute as a generic cell rate (GCRA): each key holds one instant,
 * when its allowance is whole again. A request is admitted while that instant is at most a
 * minute less one request's share (60 s / `limit`) ahead, and moves it one share further. So
 * `limit` requests at once, then one every 60 s / `limit`, and the whole allowance back a minute
 * after the last. Answers how long a request must wait (0: it is admitted).
 */
export const waitMs = (fullAt: number | undefined, now: number, limit: number): number => {
  const share = WINDOW_MS / limit
  const start = startOf(fullAt, now)
  // A thousandth of a millisecond absorbs the rounding of shares that are not whole.
  const over = start - now - (WINDOW_MS - share)
  return over > 0.001 ? over : 0
}

/** The instant the allowance is whole again after one more admitted request. */
export const afterOne = (fullAt: number | undefined, now: number, limit: number): number =>
  startOf(fullAt, now) + WINDOW_MS / limit

/**
 * A survey at its limit still admits an address that used less than its fair share of the survey
 * in the last minute: this fraction of the survey's limit (at least one request a minute).
 */
export const FAIR_SHARE_DIVISOR = 100

/** An address's fair share of a survey limited to `perSurvey` requests a minute. */
export const fairShareOf = (perSurvey: number): number => Math.max(1, Math.floor(perSurvey / FAIR_SHARE_DIVISOR))

/** How many entries each of the admissions' tables holds now: each at most `capacity`. */
export interface AdmissionEntries {
  readonly addresses: number
  readonly surveys: number
  readonly pairs: number
  readonly capacity: number
}

/**
 * The respondent limits' decisions, plain functions over three bounded tables (client addresses,
 * surveys, survey-address pairs); each answers how long the request must wait, 0 when it is
 * admitted (and then counted). Shared by the service and the raw baseline of its benchmark.
 */
export const makeAdmissions = (limits: { readonly perAddress: number; readonly perSurvey: number; readonly capacity: number }) => {
  const { capacity, perAddress, perSurvey } = limits
  const fairShare = fairShareOf(perSurvey)
  // Per key, the instant its allowance is whole again.
  const addresses = new BoundedTable<number>(capacity)
  const surveys = new BoundedTable<number>(capacity)
  const pairs = new BoundedTable<number>(capacity)
  return {
    /** A request from the client address `addressKey`. */
    address: (addressKey: string, now: number): number => {
      const fullAt = addresses.get(addressKey)
      const wait = waitMs(fullAt, now, perAddress)
      if (wait === 0) addresses.set(addressKey, afterOne(fullAt, now, perAddress))
      return wait
    },
    /**
     * A request for `surveyId` from `addressKey`. Past the survey's limit, a request whose address
     * is under its fair share of the survey is admitted all the same (and counts against that share).
     */
    survey: (surveyId: string, addressKey: string, now: number): number => {
      const pairKey = `${surveyId} ${addressKey}`
      const pairFullAt = pairs.get(pairKey)
      const pairWait = waitMs(pairFullAt, now, fairShare)
      const surveyFullAt = surveys.get(surveyId)
      const surveyWait = waitMs(surveyFullAt, now, perSurvey)
      if (surveyWait > 0 && pairWait > 0) return Math.min(surveyWait, pairWait)
      if (surveyWait === 0) surveys.set(surveyId, afterOne(surveyFullAt, now, perSurvey))
      if (pairWait === 0) pairs.set(pairKey, afterOne(pairFullAt, now, fairShare))
      return 0
    },
    entries: (): AdmissionEntries => ({ addresses: addresses.size, surveys: surveys.size, pairs: pairs.size, capacity }),
    /** Drops the entries whose allowance is whole again at `now`: they hold nothing a new entry would not. */
    sweep: (now: number): void => {
      for (const table of [addresses, surveys, pairs]) table.sweep((fullAt) => fullAt <= now)
    }
  }
}

/** A wait in ms as `Retry-After` seconds: whole, at least 1. */
export const retryAfterSeconds = (waitedMs: number): number => Math.max(1, Math.ceil(waitedMs / 1000))
