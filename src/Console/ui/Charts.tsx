import type { NumericSummary } from "./api.js"
import { formatNumber } from "./common.js"

// Hand-drawn SVG charts (docs/architecture.md#the-console): each is a figure whose SVG carries a
// text alternative, beside a table of the same numbers for screen readers and copying.

export interface Bar {
  readonly label: string
  readonly value: number
  /** What is written at the end of the bar; the value when absent. */
  readonly text?: string
}

const ROW = 28
const LABEL_WIDTH = 180
const BAR_WIDTH = 360
const WIDTH = LABEL_WIDTH + BAR_WIDTH + 90

const clip = (label: string) => label.length > 28 ? `${label.slice(0, 27)}…` : label

/** Horizontal bars, one a row, the longest for the largest value. */
export const BarChart = (
  { title, bars, valueHeading }: { readonly title: string; readonly bars: ReadonlyArray<Bar>; readonly valueHeading: string }
) => {
  const max = Math.max(1, ...bars.map((b) => b.value))
  const height = bars.length * ROW + 8
  const description = bars.map((b) => `${b.label}: ${b.text ?? formatNumber(b.value)}`).join(", ")
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${WIDTH} ${height}`} role="img" aria-label={`${title}. ${description}`} preserveAspectRatio="xMinYMin meet">
        {bars.map((b, i) => {
          const y = i * ROW + 4
          const w = Math.max(b.value > 0 ? 2 : 0, (b.value / max) * BAR_WIDTH)
          return (
            <g key={i} aria-hidden="true">
              <text x={LABEL_WIDTH - 8} y={y + ROW / 2 + 4} text-anchor="end" class="chart-label">{clip(b.label)}</text>
              <rect x={LABEL_WIDTH} y={y + 4} width={BAR_WIDTH} height={ROW - 10} class="chart-track" />
              <rect x={LABEL_WIDTH} y={y + 4} width={w} height={ROW - 10} class="chart-bar" />
              <text x={LABEL_WIDTH + BAR_WIDTH + 8} y={y + ROW / 2 + 4} class="chart-value">{b.text ?? formatNumber(b.value)}</text>
            </g>
          )
        })}
      </svg>
      <details>
        <summary>Table</summary>
        <table class="compact">
          <thead><tr><th scope="col">Option</th><th scope="col" class="num">{valueHeading}</th></tr></thead>
          <tbody>{bars.map((b, i) => <tr key={i}><td>{b.label}</td><td class="num">{b.text ?? formatNumber(b.value)}</td></tr>)}</tbody>
        </table>
      </details>
    </figure>
  )
}

/**
 * A numeric question's distribution as the analytics summarize it: the range from min to max,
 * a band of one standard deviation around the mean, the mean and the median marked.
 */
export const RangeChart = ({ title, summary }: { readonly title: string; readonly summary: NumericSummary }) => {
  const { max, mean, median, min, standardDeviation } = summary
  const stats: ReadonlyArray<readonly [string, number | null]> = [
    ["Answers", summary.count],
    ["Mean", summary.count === 0 ? null : mean],
    ["Median", median],
    ["Min", min],
    ["Max", max],
    ["Standard deviation", standardDeviation]
  ]
  const list = (
    <dl class="stats">
      {stats.map(([name, value]) => (
        <div key={name}>
          <dt>{name}</dt>
          <dd>{value === null ? "—" : formatNumber(value)}</dd>
        </div>
      ))}
    </dl>
  )
  if (min === null || max === null || summary.count === 0) return <figure class="chart">{list}</figure>
  const span = max - min || 1
  const x = (v: number) => 20 + ((v - min) / span) * 560
  const sdFrom = standardDeviation === null ? mean : Math.max(min, mean - standardDeviation)
  const sdTo = standardDeviation === null ? mean : Math.min(max, mean + standardDeviation)
  const label = `${title}. From ${formatNumber(min)} to ${formatNumber(max)}, mean ${formatNumber(mean)}` +
    (median === null ? "" : `, median ${formatNumber(median)}`) +
    (standardDeviation === null ? "" : `, standard deviation ${formatNumber(standardDeviation)}`)
  return (
    <figure class="chart">
      <svg viewBox="0 0 600 70" role="img" aria-label={label}>
        <g aria-hidden="true">
          <line x1={x(min)} x2={x(max)} y1={30} y2={30} class="chart-axis" />
          <rect x={x(sdFrom)} y={20} width={Math.max(1, x(sdTo) - x(sdFrom))} height={20} class="chart-band" />
          <line x1={x(mean)} x2={x(mean)} y1={14} y2={46} class="chart-mean" />
          {median !== null && <circle cx={x(median)} cy={30} r={6} class="chart-median" />}
          <text x={x(min)} y={64} text-anchor="start" class="chart-value">{formatNumber(min)}</text>
          <text x={x(max)} y={64} text-anchor="end" class="chart-value">{formatNumber(max)}</text>
        </g>
      </svg>
      <p class="legend muted" aria-hidden="true">
        <span class="key key-band" /> mean ± one standard deviation <span class="key key-mean" /> mean{" "}
        <span class="key key-median" /> median
      </p>
      {list}
    </figure>
  )
}

/** A share as a bar of 100 %. */
export const ShareBar = ({ label, share }: { readonly label: string; readonly share: number }) => (
  <div class="share">
    <span class="share-label">{label}</span>
    <svg viewBox="0 0 200 14" role="img" aria-label={`${label}: ${(share * 100).toFixed(1)} %`} class="share-bar">
      <rect x={0} y={0} width={200} height={14} class="chart-track" aria-hidden="true" />
      <rect x={0} y={0} width={Math.max(0, Math.min(1, share)) * 200} height={14} class="chart-bar" aria-hidden="true" />
    </svg>
    <span class="share-value">{(share * 100).toFixed(1)} %</span>
  </div>
)
