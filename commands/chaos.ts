import {writeFileSync} from 'node:fs'
import {Flags} from '@oclif/core'
import {OutboxCommand} from '../src/cli/base.js'
import {duration, names} from '../src/cli/flags.js'
import {STEPS} from '../src/core/failpoints.js'
import type {ChaosReport} from '../src/chaos/runner.js'
// the scenarios' names, not the runner: parsing the flags must not load Kysely
import {SCENARIOS} from '../src/chaos/scenarios/index.js'
import {CONSUMER_MODES, STRATEGIES, type ConsumerMode, type Strategy} from '../src/chaos/strategies.js'
import {EXIT, SIGNAL_EXIT} from '../src/core/errors.js'
import type {PartitionInterval} from '../dialects/index.js'
import {PARTITION_INTERVALS} from '../src/schema/partition-ranges.js'

export default class Chaos extends OutboxCommand {
  static override summary = 'Kill producer, relay and consumer processes at every step, then prove nothing was lost, duplicated or stuck'
  static override description = `Spawns real worker processes running this project's producer, relay and consumer runtime (the code outbox consume runs), arms one failpoint per run (the process SIGKILLs itself at that step), restarts it without failpoints, lets everything drain and checks on the database: atomic (business rows and events agree), delivered, effect once, nothing stuck, order. Also runs scenarios beyond kills: broker down, out-of-order delivery, a poison message, concurrent relays with kills among them, and network faults through a TCP proxy in the harness: a COMMIT whose answer never arrives and database connections cut mid-batch (with a database server), a broker that stops answering without a reset, a broker that acks after the lease lapsed.

Without --url it runs on a SQLite file in a temporary directory. With --url it uses PostgreSQL or MySQL/MariaDB, in its own scratch tables (chaos_<random>_*), dropped after each run; OUTBOX_DATABASE_URL and DATABASE_URL are deliberately not read. The broker is one the harness hosts on loopback unless --broker names a real one (RabbitMQ, NATS JetStream or Redis Streams).

Exit 0 only when every invariant held and every step was exercised; 1 otherwise. The broken strategies (--strategy dual-write-* or outbox-lost-is-published, --consumer naive, ack-first or ack-on-error) show what a failure looks like.

Exit codes: 0 every invariant held and every step was exercised, 1 a violation or a step not exercised, 2 bad input, an unreachable database or broker, or --timeout reached, 130/143 stopped by SIGINT/SIGTERM (no verdict; the run's scratch tables dropped).`
  static override examples = [
    '<%= config.bin %> chaos',
    '<%= config.bin %> chaos --url postgres://postgres@127.0.0.1:5432/app --junit chaos.xml --report chaos.html',
    '<%= config.bin %> chaos --steps relay.after-send,consumer.after-commit --iterations 5 --seed 42',
    '<%= config.bin %> chaos --strategy dual-write-commit-first',
    '<%= config.bin %> chaos --consumer naive --scenarios none',
    '<%= config.bin %> chaos --consumer ack-first --steps consumer.before-commit',
    '<%= config.bin %> chaos --url postgres://postgres@127.0.0.1:5432/app --steps none --scenarios commit-unknown,db-cut --iterations 4',
    '<%= config.bin %> chaos --scenario ./chaos-scenario.js --url mysql://root@127.0.0.1:3306/app',
    '<%= config.bin %> chaos --broker amqp://guest:guest@127.0.0.1:5672 --json',
  ]
  static override enableJsonFlag = true
  // runs are bounded by --run-timeout each; the global --timeout only guards against a hang
  static override defaultTimeoutMs: number | undefined = 60 * 60_000
  // chaos drops and creates tables: it takes a URL only from its own flag or chaos.url in the file
  static override sharedUrl = false
  static override flags = {
    url: Flags.string({description: 'PostgreSQL or MySQL/MariaDB URL, or sqlite:PATH (default: a temporary SQLite file)', helpValue: 'URL'}),
    steps: names(STEPS, {none: true})({description: `steps to kill at, comma-separated (default all: ${STEPS.join(', ')}; "none" for scenarios only)`, helpValue: 'STEP,...'}),
    scenarios: names(SCENARIOS, {none: true})({
      description: `scenarios beyond kills (default all that apply: ${SCENARIOS.join(', ')}; commit-unknown and db-cut need a database server (--url); with --broker only those, broker-down, concurrent-relays, hang and slow-ack (out-of-order and poison are staged by the loopback broker); "none" for kills only)`,
      helpValue: 'NAME,...',
    }),
    iterations: Flags.integer({description: 'runs per step and per scenario (each iteration of a step is killed at another pass)', default: 1, min: 1}),
    seed: Flags.integer({description: 'makes a run repeatable (chooses which pass of a step is killed in each iteration); printed with every report', min: 1}),
    strategy: Flags.string({description: 'how the producer publishes (dual-write-* are broken on purpose)', options: [...STRATEGIES], default: 'outbox'}),
    consumer: Flags.string({description: 'consumer dedupe and ack (naive and ack-first are broken on purpose)', options: [...CONSUMER_MODES], default: 'idempotent'}),
    relays: Flags.integer({description: 'relay processes per run (concurrent-relays uses at least 3)', default: 1, min: 1, max: 16}),
    orders: Flags.integer({description: 'business size of one run (orders in the built-in scenario)', default: 3, min: 1, max: 1000}),
    scenario: Flags.string({description: 'ES module with your business write, effect and invariant (see README)', helpValue: 'FILE'}),
    broker: Flags.string({description: 'real broker between relay and consumer: amqp://..., nats://... or redis://... (default: loopback)', helpValue: 'URL'}),
    junit: Flags.string({description: 'also write a JUnit XML report (one testcase per step and scenario)', helpValue: 'FILE'}),
    report: Flags.string({description: 'also write a self-contained HTML report: a timeline per run (a lane per process, kills, restarts, claims, deliveries, the database), violations marked', helpValue: 'FILE'}),
    'run-timeout': duration({description: 'give up on one run that made no progress for this long (any run after 3 times this)', default: '30s', helpValue: 'DURATION'}),
    keep: Flags.boolean({description: 'keep the scratch tables (and the SQLite file) for inspection'}),
    'partition-by': Flags.string({description: "the runs' outbox partitioned as init --partition-by makes it (PostgreSQL, MySQL/MariaDB)", options: [...PARTITION_INTERVALS]}),
  }

  async run(): Promise<ChaosReport> {
    const {flags} = await this.parse(Chaos)
    this.secretUrl = flags.url
    const [{runChaos, ChaosInterrupted}, {chaosProgress}, {randomSeed}] = await Promise.all([
      import('../src/chaos/runner.js'),
      import('../src/render/chaos.js'),
      import('../src/chaos/seed.js'),
    ])
    const json = this.jsonEnabled()
    const seed = flags.seed ?? randomSeed()
    const {stopOnSignal} = await import('../src/cli/signals.js')
    const stop = stopOnSignal({
      first: (signal) => `chaos ${signal}: killing the workers and dropping the run's scratch tables (send it again to exit at once)`,
      second: (signal) => `chaos ${signal} again: exiting now; scratch tables may be left (names start with chaos_)`,
    })
    const report = await runChaos({
      signal: stop.signal,
      seed,
      // the seed before the first run, so a run that is interrupted can still be repeated
      onStart: json ? undefined : () => process.stderr.write(`outbox chaos: seed ${seed} (repeat with --seed ${seed})\n`),
      url: flags.url,
      steps: flags.steps && [...flags.steps],
      scenarios: flags.scenarios && [...flags.scenarios],
      iterations: flags.iterations,
      strategy: flags.strategy as Strategy,
      consumer: flags.consumer as ConsumerMode,
      relays: flags.relays,
      orders: flags.orders,
      scenarioPath: flags.scenario,
      broker: flags.broker,
      runTimeoutMs: flags['run-timeout'],
      keep: flags.keep,
      history: flags.report !== undefined,
      partitionBy: flags['partition-by'] as PartitionInterval | undefined,
      onProgress: json ? undefined : chaosProgress(),
    })
      .catch((error) => {
        if (!(error instanceof ChaosInterrupted)) throw error
        // 2 after --timeout (it set the code and said why), else 128 + the signal's number
        const exitCode = Number(process.exitCode ?? SIGNAL_EXIT[stop.received ?? 'SIGTERM'])
        const line = `${error.message}, no verdict; scratch tables dropped. Repeat with --seed ${seed}`
        if (json) this.logJson({error: {message: line, exitCode}}) // as any other error: stdout never empty under --json
        process.stderr.write(`outbox: ${line}\n`)
        return this.exit(exitCode)
      })
    try {
      return await this.write(flags, report, seed, json)
    } finally {
      stop.dispose()
      // a signal after the last run: the verdict and the files are whole, the exit code says it was stopped
      if (stop.received && !process.exitCode) this.stoppedAfterRuns(stop.received, report, json)
    }
  }

  private stoppedAfterRuns(signal: keyof typeof SIGNAL_EXIT, report: ChaosReport, json: boolean): never {
    process.stderr.write(`outbox: chaos ${signal} came after the last run: the verdict above is whole (${report.ok ? 'pass' : 'fail'}), nothing was left behind\n`)
    if (json && report.ok) this.logJson(report)
    return this.exit(SIGNAL_EXIT[signal])
  }

  private async write(flags: {junit?: string; report?: string}, report: ChaosReport, seed: number, json: boolean): Promise<ChaosReport> {
    if (flags.junit) {
      const {renderJunit} = await import('../src/render/junit.js')
      writeFileSync(flags.junit, renderJunit(report))
    }
    const {renderChaosReport, repeatCommand} = await import('../src/render/chaos.js')
    if (flags.report) {
      const {renderChaosHtml} = await import('../src/render/chaos-html.js')
      writeFileSync(flags.report, renderChaosHtml(report, repeatCommand(this.config.bin, this.argv, seed)))
    }
    if (!json) process.stdout.write(await renderChaosReport(report))
    if (!report.ok) {
      if (json) this.logJson(report)
      this.exit(EXIT.check)
    }
    return report
  }
}
