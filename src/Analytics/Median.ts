/**
 * Median of a per-value count table sorted by value, holding `total` answers; the mean of the
 * two middle values for an even count (decisions §5), null when there are no answers.
 */
export const medianOf = (sorted: ReadonlyArray<readonly [number, number]>, total: number): number | null => {
  if (total <= 0) return null
  const lower = Math.floor((total - 1) / 2)
  const upper = Math.floor(total / 2)
  let seen = 0
  let low: number | undefined
  for (const [value, count] of sorted) {
    if (count <= 0) continue
    seen += count
    if (low === undefined && seen > lower) low = value
    if (seen > upper) return low === undefined ? value : (low + value) / 2
  }
  return low ?? null
}
