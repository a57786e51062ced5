// runChaos's options: what a caller may pass, and the checks that refuse bad input before
// anything is created (each one a UsageError, exit 2 on the CLI).
import type {PartitionInterval} from '../../dialects/index.js'
import {UsageError} from '../core/errors.js'
import {initPlan} from '../schema/init.js'
import {STEPS, type ChaosStep as Step} from '../core/failpoints.js'
import {dialectOfUrl} from '../config.js'
import {loadScenario, type Scenario} from './business-scenario.js'
import type {ChaosProgress} from './report.js'
import {LOOPBACK_ONLY, SCENARIOS, SERVER_ONLY, type ScenarioKind} from './scenarios/index.js'
import {randomSeed} from './seed.js'
import type {ConsumerMode, Strategy} from './strategies.js'
import type {RealBroker} from './workers/transport.js'

export interface ChaosOptions {
  /** default: a SQLite file in a temporary directory */
  url?: string
  steps?: readonly Step[]
  /** scenarios beyond kills (default all; [] for none) */
  scenarios?: readonly ScenarioKind[]
  /** runs per step and per scenario (default 1) */
  iterations?: number
  seed?: number
  strategy?: Strategy
  consumer?: ConsumerMode
  /** relay processes in every run (default 1; the concurrent-relays scenario uses at least 3) */
  relays?: number
  /** business size per run: orders for the built-in scenario (default 3) */
  orders?: number
  /** path of a scenario module (default: the built-in orders scenario) */
  scenarioPath?: string
  /** amqp://, nats:// or redis:// broker URL (default: the harness's loopback broker) */
  broker?: string
  /** runs at once (default lanes.ts's LANES; 1 runs them one after the other) */
  lanes?: number
  /** give up on a run that made no progress for this long, any run after 3 times this (default 30 s) */
  runTimeoutMs?: number
  /** how long an idle relay waits before it polls again (default 50 ms): a longer one is a relay slow to come round (tests) */
  relayPollMs?: number
  /** keep the scratch tables (and the SQLite file) for inspection */
  keep?: boolean
  /** record each run's history (RunResult.history): what `--report` draws */
  history?: boolean
  /** the runs' outbox partitioned by created_at, as init --partition-by makes it (PostgreSQL, MySQL/MariaDB) */
  partitionBy?: PartitionInterval
  onProgress?: (progress: ChaosProgress) => void
  /** called once the options are valid and the database answers, before the first run */
  onStart?: (seed: number) => void
  /**
   * abort to stop: the run in progress is abandoned, its workers killed and its scratch tables
   * (and broker objects) dropped; runChaos then rejects with ChaosInterrupted
   */
  signal?: AbortSignal
}

/** The options once checked, with their defaults filled in. */
export interface CheckedOptions {
  seed: number
  steps: readonly Step[]
  scenarios: readonly ScenarioKind[]
  iterations: number
  relays: number
  orders: number
  broker?: RealBroker
  scenario: Scenario
  scenarioPath?: string
}

const BROKER_SCHEMES: [RegExp, RealBroker['kind']][] = [
  [/^amqps?:\/\//i, 'amqp'],
  [/^nats:\/\//i, 'nats'],
  [/^rediss?:\/\//i, 'redis'],
]

export function parseBrokerUrl(url: string | undefined): RealBroker | undefined {
  if (!url || url === 'loopback') return undefined
  const kind = BROKER_SCHEMES.find(([scheme]) => scheme.test(url))?.[1]
  if (kind) return {kind, url}
  throw new UsageError(
    (o) => `unsupported ${o('broker')} ${JSON.stringify(url.replace(/\/\/[^@/]*@/, '//***@'))}`,
    'Use amqp://... (RabbitMQ), nats://... (JetStream) or redis://... (Redis Streams), or omit it for the loopback broker',
  )
}

export async function checkOptions(options: ChaosOptions): Promise<CheckedOptions> {
  const seed = options.seed ?? randomSeed()
  const steps = options.steps ?? STEPS
  const iterations = options.iterations ?? 1
  const relays = options.relays ?? 1
  const orders = options.orders ?? 3
  for (const [name, value, min] of [['iterations', iterations, 1], ['relays', relays, 1], ['orders', orders, 1], ['lanes', options.lanes ?? 1, 1]] as const) {
    if (!Number.isSafeInteger(value) || value < min) throw new UsageError((o) => `${o(name)} must be a whole number >= ${min} (got ${value})`, (o) => `Pass e.g. ${o(name)} 2`)
  }
  const unknown = steps.filter((s) => !STEPS.includes(s))
  if (unknown.length) throw new UsageError(`unknown step ${unknown.join(', ')}`, `Steps: ${STEPS.join(', ')}`)
  const broker = parseBrokerUrl(options.broker)
  // no URL is a SQLite file, which cannot partition: refused as init refuses it
  if (options.partitionBy) initPlan(await dialectOfUrl(options.url ?? 'sqlite:chaos.db'), {outbox: 'o', inbox: 'i', archive: 'a'}, {inbox: false, archive: false, partitionBy: options.partitionBy})
  if (options.url) {
    await dialectOfUrl(options.url)
    if (/^sqlite3?::memory:/.test(options.url)) throw new UsageError('chaos needs a database its worker processes share', (o) => `Use a file (sqlite:./chaos.db) or omit ${o('url')}`)
  }
  // the fault proxy stands before a server reached over TCP: not a database file, not a socket
  const wire = options.url ? (await dialectOfUrl(options.url)).wire : undefined
  const server = Boolean(options.url && wire?.target(options.url))
  // reordering and poison are staged by the loopback broker; a real one runs the rest
  const scenarios = options.scenarios ?? SCENARIOS.filter((x) => !(broker && LOOPBACK_ONLY.includes(x)) && (server || !SERVER_ONLY.includes(x)))
  const unknownScenarios = scenarios.filter((x) => !SCENARIOS.includes(x))
  if (unknownScenarios.length) throw new UsageError(`unknown scenario ${unknownScenarios.join(', ')}`, `Scenarios: ${SCENARIOS.join(', ')}`)
  const needLoopback = broker ? scenarios.filter((x) => LOOPBACK_ONLY.includes(x)) : []
  if (needLoopback.length) throw new UsageError((o) => `scenario ${needLoopback.join(', ')} needs the loopback broker, not ${o('broker')}`, (o) => `Drop ${o('broker')} for it, or choose ${o('scenarios')} broker-down,concurrent-relays,hang,slow-ack`)
  const needServer = server ? [] : scenarios.filter((x) => SERVER_ONLY.includes(x))
  if (needServer.length) {
    throw new UsageError(
      (o) => `scenario ${needServer.join(', ')} cuts database connections through a proxy: it needs a database server reached over TCP, not a file or a socket`,
      (o) => `Pass ${o('url')} with a server's host and port, or leave ${needServer.join(', ')} out of ${o('scenarios')}`,
    )
  }
  const {scenario, path: scenarioPath} = await loadScenario(options.scenarioPath)
  return {seed, steps, scenarios, iterations, relays, orders, broker, scenario, scenarioPath}
}
