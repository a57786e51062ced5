// The relay under production pressure (issue 23), after the phases of the public job-queue
// benchmark (hardbyte/postgresql-job-queue-benchmarking, docs/method.md): a fixed-rate producer
// (business transactions with writeEvent) and two `outbox relay` processes (the shipped CLI,
// stdout publisher) through clean / idle-in-tx / active-readers / high-load (1.5x) / recovery,
// on PostgreSQL and MariaDB; with --faults=kill,cut also a phase with a relay SIGKILLed every
// 5 s and one with the relays' connections cut 4 times a second. Per phase: produced and
// published/s, latency commit -> publish, the relays' batch time, the outbox's gauges; in all:
// events lost and duplicated. Throughput and latency depend on the machine's load; the pending
// scan's buffer count (PostgreSQL) does not, and is the figure to compare between runs.
// Options (`npm run bench -- pressure --idle-seconds=600`): --rate=N (default 1000),
// --seconds=N (every phase), --clean-seconds= --idle-seconds= --readers-seconds=
// --high-seconds= --recovery-seconds= --fault-seconds=, --dialects=postgres,mysql,
// --faults=kill,cut,restart,slots, --producers=N, --claim-from=mark|start (the relays' flag; default
// theirs), --pg-url= --mysql-url= (the servers; restart and slots refuse the shared ones),
// --slots-free=N (slots left free in the slots phase, default 3), --down-seconds=N (the restart
// keeps the server stopped that long, default 0), --label=NAME (the plots are
// pressure-NAME-<dialect>.svg), --autovacuum=on|server (PostgreSQL; default on, as production
// runs: bench/pressure-autovacuum.js), --readers-nice=N (PostgreSQL on this machine: the
// readers' backends at nice N, without parallel workers: the closest this machine gets to a
// server with cores to spare for them; bench/pressure-load.js startReaders). --quick: 20 s phases.
// restart: the server restarted a third into the phase (bench/pressure-faults.js); slots: all
// but --slots-free connection slots taken by idle sessions for the phase, the relays'
// connections cut every 5 s so they must connect again into the few left.
// Diagnostics (environment): PRESSURE_DUMP=<file> writes every relay batch line (with its wall
// clock), the per-second series and the gauges as JSON; RELAY_PGOPTIONS='-c ...' gives the relays'
// connections server settings (log_min_duration_statement, auto_explain: the relay's own
// `options` replace PGOPTIONS).
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {onInterrupt} from '../interrupt.js'
import {setAutovacuum} from '../pressure-autovacuum.js'
import {dropTables, freshTables} from '../outbox.js'
import {hogSlots, requirePrivate, restartServer} from '../pressure-faults.js'
import {gauges, holdHorizon, reconnecting, startControl, startProducers, startReaders} from '../pressure-load.js'
import {RelaySet} from '../pressure-relays.js'
import {pressureSvg} from '../pressure-svg.js'
import {ensurePgDatabase, lib, MYSQL_URL, PG_URL, unreachable} from '../servers.js'
import {pressureMarkdown, phaseFigures, secondSeries} from '../pressure-report.js'

const RELAYS = 2
// Producer connections: a durable COMMIT takes 10-40 ms on this loaded machine, so 1,500/s
// needs a few dozen transactions in flight.
const PRODUCERS = 24
const READERS = 4
const GAUGE_MS = 2000
const DRAIN_MS = 60_000
const KILL_EVERY_MS = 5000
const CUT_EVERY_MS = 250
const SLOTS_CUT_EVERY_MS = 5000
const SLOTS_FREE = 3

const sleep = (ms) => new Promise((r) => setTimeout(r, Math.max(0, ms)))

function options(args, quick) {
  const opt = Object.fromEntries(args.filter((a) => a.startsWith('--') && a.includes('=')).map((a) => a.slice(2).split('=')))
  const known = ['rate', 'seconds', 'clean-seconds', 'idle-seconds', 'readers-seconds', 'high-seconds', 'recovery-seconds', 'fault-seconds', 'dialects', 'faults', 'producers', 'claim-from', 'pg-url', 'mysql-url', 'slots-free', 'label', 'down-seconds', 'autovacuum', 'readers-nice']
  const unknown = Object.keys(opt).filter((k) => !known.includes(k))
  if (unknown.length) throw new Error(`pressure: unknown option(s) ${unknown.map((k) => `--${k}`).join(', ')}; known: ${known.map((k) => `--${k}=`).join(' ')}`)
  const base = Number(opt.seconds ?? (quick ? 20 : 0))
  const len = (key, full) => Number(opt[key] ?? (base || full))
  const faults = (opt.faults ?? '').split(',').filter(Boolean)
  const phases = [
    {name: 'clean', seconds: len('clean-seconds', 120)},
    {name: 'idle-in-tx', seconds: len('idle-seconds', 600), hold: true},
    {name: 'active-readers', seconds: len('readers-seconds', 600), readers: true},
    {name: 'high-load', seconds: len('high-seconds', 120), factor: 1.5},
    {name: 'recovery', seconds: len('recovery-seconds', 240)},
    ...(faults.includes('kill') ? [{name: 'relay-kill', seconds: len('fault-seconds', 60), kill: true}] : []),
    ...(faults.includes('cut') ? [{name: 'conn-cut', seconds: len('fault-seconds', 60), cut: true}] : []),
    ...(faults.includes('restart') ? [{name: 'db-restart', seconds: len('fault-seconds', 60), restart: true}] : []),
    ...(faults.includes('slots') ? [{name: 'slots-full', seconds: len('fault-seconds', 60), slots: true}] : []),
    ...(faults.length ? [{name: 'after-faults', seconds: len('recovery-seconds', 240)}] : []),
  ]
  for (const p of phases) if (!(p.seconds > 0)) throw new Error(`pressure: ${p.name} needs a positive length in seconds`)
  const unknownFault = faults.filter((f) => !['kill', 'cut', 'restart', 'slots'].includes(f))
  if (unknownFault.length) throw new Error(`pressure: unknown fault(s) ${unknownFault.join(', ')}; known: kill, cut, restart, slots`)
  const urls = {postgres: opt['pg-url'] ?? PG_URL, mysql: opt['mysql-url'] ?? MYSQL_URL}
  const dialects = (opt.dialects ?? 'postgres,mysql').split(',')
  for (const d of dialects) for (const f of faults.filter((x) => x === 'restart' || x === 'slots')) if (urls[d]) requirePrivate(d, urls[d], f)
  const slotsFree = Number(opt['slots-free'] ?? SLOTS_FREE)
  const autovacuum = opt.autovacuum ?? 'on'
  if (!['on', 'server'].includes(autovacuum)) throw new Error(`pressure: --autovacuum=${autovacuum}: on or server`)
  const readersNice = opt['readers-nice'] === undefined ? undefined : Number(opt['readers-nice'])
  if (readersNice !== undefined && !(Number.isInteger(readersNice) && readersNice >= 0 && readersNice <= 19)) throw new Error(`pressure: --readers-nice=${opt['readers-nice']}: a nice level from 0 to 19`)
  // MariaDB's connections are threads of one process, named only by performance_schema (off here)
  if (readersNice !== undefined && dialects.includes('mysql')) throw new Error('pressure: --readers-nice is PostgreSQL only (pass --dialects=postgres)')
  return {rate: Number(opt.rate ?? 1000), readersNice, producers: Number(opt.producers ?? PRODUCERS), dialects, urls, slotsFree, downSeconds: Number(opt['down-seconds'] ?? 0), label: opt.label, claimFrom: opt['claim-from'], autovacuum, phases}
}

/** One run on one dialect: every phase in turn, then the drain; the tables dropped in any case. */
async function run(dialect, config, log) {
  const url = config.urls[dialect]
  const db = await lib.openDb(url, {poolSize: 1})
  const names = await freshTables(db, 'prs')
  // opened again after a server restart
  const admin = reconnecting(dialect, url)
  const t0 = performance.now()
  const at = (t) => (t - t0) / 1000
  const committed = new Map()
  const published = new Map()
  const batches = []
  const samples = []
  const duplicates = [] // when each one arrived
  const relays = new RelaySet({
    dialect,
    url,
    table: names.outbox,
    count: RELAYS,
    claimFrom: config.claimFrom,
    onEvent: (id, t) => (published.has(id) ? duplicates.push(at(t)) : published.set(id, at(t))),
    onBatch: (ms, claimed, t, claimMs) => batches.push({t: at(t), wall: Date.now(), ms, claimed, claimMs}),
  })
  let producers
  let control
  // sessions holding the horizon or scanning: they hold locks a DROP TABLE would wait for
  const holders = new Set()
  const dropAll = async () => {
    relays.killAll()
    await control?.stop()
    for (const h of holders) await h.end()
    await admin.run(`DROP TABLE IF EXISTS ${names.outbox}_orders`).catch(() => {})
    await dropTables(db, names)
  }
  const unregister = onInterrupt(dropAll)
  const phases = []
  try {
    relays.start()
    await relays.ready()
    control = startControl(dialect, url)
    producers = await startProducers({dialect, url, names, connections: config.producers, rate: config.rate, onCommit: (id, t) => committed.set(id, at(t))})
    let running = true
    const gaugeState = {} // the gauge's own low-water mark (PostgreSQL)
    const sampler = (async () => {
      while (running) {
        const t = at(performance.now())
        samples.push({t, ...(await gauges(dialect, admin, names, gaugeState).catch((e) => ({error: e.message})))})
        await sleep(GAUGE_MS)
      }
    })()
    let cuts = 0
    const restarts = [] // seconds each restart took until the server answered
    const slots = [] // idle sessions held, and the server's refusal that stopped the count
    for (const phase of config.phases) {
      const from = at(performance.now())
      producers.setRate(config.rate * (phase.factor ?? 1))
      const held = phase.hold ? await holdHorizon(dialect, url, names.outbox) : undefined
      const readers = phase.readers ? await startReaders(dialect, url, names.outbox, READERS, {nice: config.readersNice}) : undefined
      const hogs = phase.slots ? await hogSlots(dialect, url, config.slotsFree) : undefined
      for (const h of [held, readers, hogs]) if (h) holders.add(h)
      if (hogs) slots.push({held: hogs.count, refusal: hogs.refusal})
      const end = performance.now() + phase.seconds * 1000
      let nextKill = performance.now() + KILL_EVERY_MS
      let nextSlotsCut = performance.now() + SLOTS_CUT_EVERY_MS
      let restartAt = phase.restart ? performance.now() + (phase.seconds * 1000) / 3 : Infinity
      let faultTo
      while (performance.now() < end) {
        if (phase.kill && performance.now() >= nextKill) {
          nextKill += KILL_EVERY_MS
          relays.kill(0)
        }
        if (phase.cut) cuts += await relays.cutConnections(admin).catch(() => 0)
        if (phase.slots && performance.now() >= nextSlotsCut) {
          nextSlotsCut += SLOTS_CUT_EVERY_MS
          cuts += await relays.cutConnections(admin).catch(() => 0)
        }
        if (performance.now() >= restartAt) {
          restartAt = Infinity
          log(`${dialect} ${phase.name}: restarting the server`)
          restarts.push(await restartServer(dialect, url, config.downSeconds))
          faultTo = at(performance.now())
          log(`${dialect} ${phase.name}: the server answers again after ${restarts.at(-1).toFixed(1)} s`)
        }
        await sleep(phase.cut ? CUT_EVERY_MS : 100)
      }
      // the relays' claim under EXPLAIN / ANALYZE, once, before the phase's horizon is let go (the sampler takes it)
      gaugeState.claimWanted = true
      while (gaugeState.claimWanted && running) await sleep(50)
      await held?.release()
      await readers?.stop()
      await hogs?.release()
      holders.clear()
      phases.push({name: phase.name, from, to: at(performance.now()), faultTo, rate: config.rate * (phase.factor ?? 1)})
      log(`${dialect} ${phase.name}: ${phase.seconds} s, ${committed.size} committed, ${published.size} published so far`)
    }
    await producers.stop()
    const drainEnd = performance.now() + DRAIN_MS
    while (performance.now() < drainEnd && [...committed.keys()].some((id) => !published.has(id))) await sleep(200)
    running = false
    await sampler
    await control.stop()
    await relays.stop()
    const [left] = await admin.run(`SELECT COUNT(*) AS n FROM ${names.outbox} WHERE published_at IS NULL`)
    const lost = [...committed.keys()].filter((id) => !published.has(id)).length
    const series = secondSeries(committed, published, at(performance.now()))
    const controlMs = control.samples.map((c) => ({t: at(c.t), ms: c.ms}))
    if (process.env.PRESSURE_DUMP) writeFileSync(process.env.PRESSURE_DUMP, JSON.stringify({t0wall: Date.now() - (performance.now() - t0), table: names.outbox, phases, batches, series, samples, control: controlMs}))
    const figures = phaseFigures({phases, committed, published, duplicates, batches, samples, series, control: controlMs})
    writeFileSync(join(new URL('../results', import.meta.url).pathname, svgName(config.label, dialect)), pressureSvg({title: `outbox relay x${RELAYS} under pressure: ${dialect === 'postgres' ? 'PostgreSQL' : 'MariaDB'}, target ${config.rate} events/s`, series, phases}))
    return {dialect, phases: figures, series, totals: {committed: committed.size, published: published.size, lost, duplicates: duplicates.length, unpublishedRows: Number(left.n), producerErrors: producers.stats.errors, producerLastError: producers.stats.lastError, relayExits: relays.exits, kills: relays.kills, connectionsCut: cuts, restarts, slots}}
  } finally {
    unregister()
    await dropAll()
    await admin.end()
    await db.close()
  }
}

const svgName = (label, dialect) => `pressure-${label ? `${label}-` : ''}${dialect}.svg`

export default async function pressure({quick, log, args = []}) {
  const config = options(args, quick)
  const skipped = {}
  for (const d of config.dialects) {
    if (!config.urls[d]) throw new Error(`pressure: unknown dialect ${d} (postgres, mysql)`)
    if (d === 'postgres') await ensurePgDatabase(config.urls.postgres)
    const down = await unreachable(config.urls[d])
    if (down) skipped[d] = down
  }
  const runs = []
  for (const d of config.dialects.filter((x) => !skipped[x])) {
    const vacuum = d === 'postgres' && config.autovacuum === 'on' ? await setAutovacuum(config.urls.postgres, 'on') : undefined
    if (vacuum?.changed) log(`postgres: autovacuum was ${vacuum.found} on the server: on for this run, put back after`)
    const unregister = vacuum ? onInterrupt(vacuum.restore) : () => {}
    try {
      runs.push({...(await run(d, config, log)), autovacuum: vacuum ? (vacuum.changed ? `on for the run (the server's: ${vacuum.found})` : 'on (the server\'s own)') : undefined})
    } finally {
      unregister()
      await vacuum?.restore()
    }
  }
  return {
    title: 'Relay under production pressure (two `outbox relay` processes, phases)',
    markdown: pressureMarkdown({quick, config, runs, skipped, relays: RELAYS, readers: READERS, svg: (d) => svgName(config.label, d)}),
    raw: {config, skipped, runs},
  }
}
