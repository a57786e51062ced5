// The pressure suite's plot, written as SVG text (no plotting dependency): per second,
// produced and published events/s in the top panel, the p99 latency of the events published
// in that second (log scale) below; phases as shaded bands with their names.
const W = 900
const PANEL = 200
const LEFT = 60
const TOP = 30
const GAP = 40
const COLORS = {produced: '#1f77b4', published: '#ff7f0e', p99: '#d62728'}

const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'})[c])

/** series: [{t, produced, published, p99}] one per second; phases: [{name, from, to}] in seconds. */
export function pressureSvg({title, series, phases}) {
  const end = Math.max(1, ...phases.map((p) => p.to), ...series.map((s) => s.t + 1))
  const x = (t) => LEFT + (t / end) * (W - LEFT - 20)
  const maxRate = Math.max(10, ...series.map((s) => Math.max(s.produced, s.published))) * 1.1
  const yRate = (v) => TOP + PANEL - (v / maxRate) * PANEL
  const latencies = series.map((s) => s.p99).filter((v) => Number.isFinite(v) && v > 0)
  const lo = 1
  const hi = Math.max(10, ...latencies) * 1.5
  const top2 = TOP + PANEL + GAP
  const yLat = (v) => top2 + PANEL - ((Math.log10(Math.max(lo, v)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) * PANEL
  const line = (key, y) =>
    `<polyline fill="none" stroke="${COLORS[key]}" stroke-width="1.5" points="${series
      .filter((s) => Number.isFinite(s[key]) && (key !== 'p99' || s[key] > 0))
      .map((s) => `${x(s.t + 0.5).toFixed(1)},${y(s[key]).toFixed(1)}`)
      .join(' ')}"/>`
  const bands = phases.map(
    (p, i) =>
      `<rect x="${x(p.from).toFixed(1)}" y="${TOP}" width="${(x(p.to) - x(p.from)).toFixed(1)}" height="${2 * PANEL + GAP}" fill="${i % 2 ? '#f2f2f2' : '#fafafa'}"/>` +
      `<text x="${(x(p.from) + 3).toFixed(1)}" y="${TOP + 12}" font-size="11">${esc(p.name)}</text>`,
  )
  const rateTicks = [0, 0.5, 1].map((f) => Math.round((maxRate / 1.1) * f))
  const latTicks = [1, 10, 100, 1000, 10000, 100000].filter((v) => v <= hi)
  const axis = (y, label) => `<line x1="${LEFT}" x2="${W - 20}" y1="${y.toFixed(1)}" y2="${y.toFixed(1)}" stroke="#ccc"/><text x="${LEFT - 4}" y="${(y + 4).toFixed(1)}" font-size="10" text-anchor="end">${label}</text>`
  const h = top2 + PANEL + 40
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${h}" font-family="sans-serif">
<rect width="${W}" height="${h}" fill="white"/>
<text x="${LEFT}" y="18" font-size="13">${esc(title)}</text>
${bands.join('\n')}
${rateTicks.map((v) => axis(yRate(v), v)).join('\n')}
${latTicks.map((v) => axis(yLat(v), v >= 1000 ? `${v / 1000} s` : `${v} ms`)).join('\n')}
${line('produced', yRate)}
${line('published', yRate)}
${line('p99', yLat)}
<text x="${LEFT}" y="${TOP + PANEL + 14}" font-size="11"><tspan fill="${COLORS.produced}">produced/s</tspan>  <tspan fill="${COLORS.published}">published/s</tspan></text>
<text x="${LEFT}" y="${top2 + PANEL + 14}" font-size="11"><tspan fill="${COLORS.p99}">p99 commit -> publish (log scale), per second</tspan>; x: ${Math.round(end)} s in all</text>
</svg>
`
}
