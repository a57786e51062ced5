// The lines of the Prometheus text format (0.0.4) that the relay's and status's metrics share.

export type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary'

/** the HELP and TYPE lines that open a family */
export function family(name: string, type: MetricType, help: string): string[] {
  return [`# HELP ${name} ${escapeHelp(help)}`, `# TYPE ${name} ${type}`]
}

export function sample(name: string, labels: Record<string, string>, value: number): string {
  const text = Object.entries(labels)
    .map(([k, v]) => `${k}="${escapeLabel(v)}"`)
    .join(',')
  return `${name}${text ? `{${text}}` : ''} ${formatValue(value)}`
}

function escapeHelp(text: string): string {
  return text.replaceAll('\\', '\\\\').replaceAll('\n', '\\n')
}

function escapeLabel(value: string): string {
  return value.replaceAll('\\', '\\\\').replaceAll('\n', '\\n').replaceAll('"', '\\"')
}

function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN'
  if (!Number.isFinite(value)) return value > 0 ? '+Inf' : '-Inf'
  return String(value)
}
