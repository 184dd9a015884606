/**
 * A webhook's delivery rate as a schedule of slots (the generic cell rate algorithm): each
 * attempt takes the next free slot, one interval after the last one taken, and may be made once
 * its slot is at most `toleranceMillis` ahead. The next free slot is stored with the webhook, so
 * every process delivering from one database takes slots from the one schedule.
 */

/** Milliseconds between two slots. */
export const intervalMillis = (perSecond: number): number => 1000 / perSecond

/**
 * How far ahead of its slot an attempt may be made, so that a round of the worker that comes a
 * little late catches up. Any 10 s then hold at most `floor((10 s + tolerance) / interval) + 1`
 * attempts: less than 10 % over the rate (none at 1 per second).
 */
export const toleranceMillis = (perSecond: number): number => Math.min(250, 1000 - intervalMillis(perSecond))

/** The first slot free at `now`, given the stored next free slot (a slot in the past is free now). */
export const firstFree = (nextSlotAt: number, now: number): number => Math.max(nextSlotAt, now)

/** How many attempts may be made at `now` from the free slot `start` on. */
export const attemptsAllowed = (start: number, now: number, perSecond: number): number => {
  const ahead = now + toleranceMillis(perSecond) - start
  return ahead < 0 ? 0 : Math.floor(ahead / intervalMillis(perSecond)) + 1
}

/** When an attempt may be made in the slot `at`. */
export const madeFrom = (at: number, perSecond: number): number => at - toleranceMillis(perSecond)
