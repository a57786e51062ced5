// Reading a callgrind dump (valgrind --tool=callgrind, one event: Ir) for bench/sqlite-drain.js:
// its total, and each function's self instructions. Code without a symbol (V8's JIT output) is
// named by node --perf-basic-prof's map, where the address falls in one of its entries.

/** The dump's total instructions (its `totals:` or `summary:` line). */
export function totalOf(text) {
  const line = /^(?:totals|summary): (\d+)/m.exec(text)
  if (!line) throw new Error('callgrind dump without totals')
  return Number(line[1])
}

/** Self instructions by function, named `object: function`, JIT code `JS: <perf map name>`. */
export function functionCosts(text, perfMap = '') {
  const jit = perfEntries(perfMap)
  const names = {ob: new Map(), fn: new Map()}
  /** `ob=(3) /path` defines id 3, `ob=(3)` refers to it (name compression) */
  const named = (kind, value) => {
    const m = /^\((\d+)\)(?: (.*))?$/.exec(value)
    if (!m) return value
    if (m[2] !== undefined) names[kind].set(m[1], m[2])
    return names[kind].get(m[1])
  }
  const costs = new Map()
  let ob = '???'
  let fn = '???'
  let callCost = false
  for (const line of text.split('\n')) {
    if (line.startsWith('ob=')) ob = named('ob', line.slice(3))
    else if (line.startsWith('fn=')) fn = label(ob, named('fn', line.slice(3)), jit)
    else if (line.startsWith('cob=')) named('ob', line.slice(4))
    else if (line.startsWith('cfn=')) named('fn', line.slice(4))
    else if (line.startsWith('calls=')) callCost = true
    else if (/^[0-9+*-]/.test(line)) {
      // the line after calls= is the call's inclusive cost, not this function's own
      if (callCost) callCost = false
      else costs.set(fn, (costs.get(fn) ?? 0) + Number(line.split(' ')[1] ?? 0))
    }
  }
  return costs
}

function label(ob, fn, jit) {
  const address = /^0x([0-9a-f]+)$/.exec(fn)
  if (address) {
    const entry = lookup(jit, Number.parseInt(address[1], 16))
    if (entry) return `JS: ${entry}`
  }
  return `${ob.split('/').at(-1)}: ${fn}`
}

/** perf map lines `start size name`, sorted by start */
function perfEntries(text) {
  return text
    .split('\n')
    .map((line) => /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(line))
    .filter(Boolean)
    .map((m) => ({start: Number.parseInt(m[1], 16), size: Number.parseInt(m[2], 16), name: m[3]}))
    .sort((a, b) => a.start - b.start)
}

function lookup(entries, at) {
  let lo = 0
  let hi = entries.length - 1
  let found
  while (lo <= hi) {
    const mid = (lo + hi) >> 1
    if (entries[mid].start <= at) {
      found = entries[mid]
      lo = mid + 1
    } else hi = mid - 1
  }
  return found && at < found.start + found.size ? found.name : undefined
}
