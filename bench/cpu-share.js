// Where a run's wall time goes, from a V8 CPU profile of this process (the same data as
// `node --cpu-prof`, taken in-process through the inspector so one run of a suite can be
// profiled): each sample's self time goes to the file it ran in, grouped as our compiled code
// (by folder of dist/), the pg driver, the broker's client, Node itself, garbage collection,
// and idle (the event loop waiting on the database and the broker).
import {Session} from 'node:inspector/promises'
import {pathToFileURL} from 'node:url'
import {DIST} from './lib-under-test.js'

const dist = pathToFileURL(DIST).href + '/'

/** The group a profile node's self time belongs to. */
function group({functionName, url}) {
  if (functionName === '(idle)') return 'idle (waiting on I/O)'
  if (functionName === '(garbage collector)') return 'garbage collection'
  if (functionName === '(program)') return 'V8 / native (program)'
  if (url.startsWith(dist)) {
    const file = url.slice(dist.length)
    if (file.startsWith('src/consume/')) return 'ours: src/consume (runtime, loop, decode)'
    if (file === 'src/consumer.js') return 'ours: src/consumer.js'
    if (file.startsWith('src/db/') || file.startsWith('dialects/')) return 'ours: Db layer and dialect (db/, dialects/)'
    return `ours: other (${file.split('/').slice(0, 2).join('/')})`
  }
  const pkg = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1]
  if (pkg) {
    if (/^pg(-|$)|^postgres-/.test(pkg)) return 'pg driver (pg, pg-pool, pg-protocol, ...)'
    if (/^(amqplib|nats|@nats-io\/|redis$|@redis\/|bitsyntax|buffer-more-ints)/.test(pkg)) return 'broker client (amqplib / nats / redis)'
    return `other package (${pkg})`
  }
  if (url.includes('/bench/')) return 'bench harness'
  return 'Node internals (net, streams, timers, ...)'
}

/**
 * Runs fn under the sampling profiler; returns fn's result and the self time per group, in ms,
 * counted only for samples between window().first and window().last (performance.now() times
 * fn records), so connecting and closing are left out.
 */
export async function profiled(fn, window, intervalUs = 250) {
  const session = new Session()
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.setSamplingInterval', {interval: intervalUs})
  await session.post('Profiler.start')
  // The profile's clock (µs) and process.hrtime are both the monotonic clock: read hrtime and
  // performance.now() together for the offset. (Reading performance.now() once Profiler.start
  // returned, as this did, put every sample that call's duration late: 7.7 ms in a check with a
  // timed busy loop, enough to count a client's start-up inside the window.)
  const hrNs = process.hrtime.bigint()
  const perfNow = performance.now()
  const perfOf = (atUs) => Number(BigInt(Math.round(atUs)) * 1000n - (hrNs - BigInt(Math.round(perfNow * 1e6)))) / 1e6
  let result
  let profile
  try {
    result = await fn()
  } finally {
    ;({profile} = await session.post('Profiler.stop'))
    session.disconnect()
  }
  const {first, last} = window(result)
  const byId = new Map(profile.nodes.map((node) => [node.id, node.callFrame]))
  const groups = {}
  const functions = {}
  let at = profile.startTime
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i]
    const ms = perfOf(at)
    if (ms < first || ms > last) continue
    const frame = byId.get(profile.samples[i])
    const name = group(frame)
    // a sample stands for the interval up to the next one
    const weight = (profile.timeDeltas[i + 1] ?? intervalUs) / 1000
    groups[name] = (groups[name] ?? 0) + weight
    const where = `${frame.functionName || '(anonymous)'} ${frame.url.replace(/^.*\/node_modules\//, '').replace(dist, 'dist/')}:${frame.lineNumber + 1}`
    functions[where] = (functions[where] ?? 0) + weight
  }
  return {result, groups, functions, windowMs: last - first}
}

/** The `n` functions with the most self time, idle left out: [where, ms]. */
export function topFunctions({functions}, n = 8) {
  return Object.entries(functions)
    .filter(([where]) => !where.startsWith('(idle)'))
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
}

/** The groups as shares of the window, largest first. */
export function shares({groups, windowMs}) {
  return Object.entries(groups)
    .map(([name, ms]) => ({name, ms, share: ms / windowMs}))
    .sort((a, b) => b.ms - a.ms)
}
