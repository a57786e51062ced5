// Sparklines: a series drawn as Unicode block characters, one per value (`status --watch`).

const BLOCKS = '▁▂▃▄▅▆▇█'

/**
 * The last `width` values, one character each. Heights run from 0 to the largest value shown
 * (the figures drawn are counts and durations): a steady backlog of 500 draws full height,
 * not flat at the floor, and 0 is always the lowest block. A missing value (null, NaN: no
 * latency while nothing was published) is a space.
 */
export function sparkline(values: readonly (number | null)[], width = values.length): string {
  const shown = width > 0 ? values.slice(-width) : []
  const max = Math.max(0, ...shown.map((v) => (v !== null && Number.isFinite(v) ? v : 0)))
  return shown
    .map((v) => {
      if (v === null || !Number.isFinite(v)) return ' '
      const level = max === 0 ? 0 : Math.round((Math.max(0, v) / max) * (BLOCKS.length - 1))
      return BLOCKS[level]
    })
    .join('')
}
