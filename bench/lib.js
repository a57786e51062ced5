// Small statistics helpers shared by the suites.
export function median(values) {
  const s = [...values].sort((a, b) => a - b)
  const m = Math.floor(s.length / 2)
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}

export function summary(values) {
  return {median: median(values), min: Math.min(...values), max: Math.max(...values), runs: values.length}
}

export function percentile(values, p) {
  const s = [...values].sort((a, b) => a - b)
  if (s.length === 0) return NaN
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]
}

export const fmt = (n, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : '-')
