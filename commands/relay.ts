import {Flags} from '@oclif/core'
import {hasTimedOut, OutboxCommand} from '../src/cli/base.js'
import {backoff, connectionFlags, duration, nonNegativeInt, positiveInt, tableFlags, tableNamesFrom} from '../src/cli/flags.js'
import {publisherOptions} from '../src/cli/relay/publisher-options.js'
import {resolveConnection} from '../src/config.js'
import {EXIT, UsageError} from '../src/core/errors.js'

export default class RelayCommand extends OutboxCommand {
  static override summary = 'Run the relay: claim events, publish them to a broker, mark them, back off and fail after a threshold'
  static override description = `Claims up to --batch events at a time (SKIP LOCKED leases on the database clock), publishes them, marks the acknowledged ones published in one UPDATE, and schedules each failure for a retry with exponential backoff, failing it once it reaches --max-attempts. Run as many relays as you like, on any number of machines: they coordinate through the database only.

--once drains what is deliverable now, for CI and cron. It exits 0 only when nothing it should have delivered is left, and 1 when events are still pending (a failed publish waiting out its backoff; a broker that took nothing, whose events keep their attempts; events an earlier run left) or failed, with one line on stderr saying how many and why. Events another relay holds a live lease on are that relay's to report, and events written after the run started that it never touched are the next run's. SIGTERM or SIGINT stops --once too, after the batch in flight. Without --once it runs until SIGTERM or SIGINT, then finishes the batch in flight, hands back the leases it has not sent, and exits 0. Logs go to stderr, one line per batch (JSON with --log-format json).

Exit codes: 0 done (--once: nothing left pending or failed; without --once: stopped by SIGTERM/SIGINT), 1 --once left events pending or failed, 2 bad input, an unreachable database, a connection lost mid-run or --timeout reached, 130/143 --once stopped by SIGINT/SIGTERM with events left.`
  static override examples = [
    '<%= config.bin %> relay --url postgres://app@db/app --publisher http --target https://events.example.com/ingest',
    '<%= config.bin %> relay --url sqlite:./app.db --publisher stdout --once > events.jsonl',
    '<%= config.bin %> relay --url mysql://app@db/app --publisher amqp --target amqp://guest:guest@mq:5672 --exchange orders',
    '<%= config.bin %> relay --publisher nats --target nats://127.0.0.1:4222 --stream ORDERS --subject-prefix orders. --ordering aggregate',
    '<%= config.bin %> relay --publisher redis --target redis://127.0.0.1:6379 --stream outbox --metrics-port 9464 --log-format json',
    '<%= config.bin %> relay --publisher http --target http://127.0.0.1:8080/events --once --max-attempts 3 --backoff 100ms..5s --json',
  ]
  static override enableJsonFlag = true
  static override defaultTimeoutMs = undefined
  static override flags = {
    ...connectionFlags,
    ...tableFlags,
    publisher: Flags.string({description: 'where events go', options: ['stdout', 'http', 'amqp', 'nats', 'redis'], required: true}),
    target: Flags.string({description: 'http(s) URL to POST to, or the broker URL (amqp://, nats://, redis://); default $OUTBOX_TARGET', helpValue: 'URL', env: 'OUTBOX_TARGET'}),
    batch: positiveInt({description: 'events per claim to begin with, and the least a claim asks for', default: '100', helpValue: 'N', max: 10_000}),
    'max-batch': positiveInt({
      description: 'most events per claim: while claims come back full each asks for twice the last, up to this (default 10 x --batch, at most 1000; http: what fits in --lease when every request times out)',
      helpValue: 'N',
      max: 10_000,
    }),
    lease: duration({description: 'lease per batch; a batch not settled within it may be taken over', default: '30s', helpValue: 'DURATION'}),
    'max-attempts': positiveInt({description: 'an event is failed when its attempts reach this', default: '10', helpValue: 'N', max: 1000}),
    backoff: backoff({description: 'retry delay BASE..CAP, exponential with jitter', default: '1s..10m', helpValue: 'BASE..CAP'}),
    concurrency: positiveInt({description: 'batches in flight in this process (with the row lease, their claims take turns)', default: '1', helpValue: 'N', max: 64}),
    ordering: Flags.string({description: 'aggregate: never deliver an event before the older events of its aggregate', options: ['none', 'aggregate'], default: 'none'}),
    'claim-from': Flags.string({
      description: "mark: each claim starts at a low-water mark, not walking what a held xid or read view keeps (default on PostgreSQL); start: at the index's start",
      options: ['mark', 'start'],
    }),
    'mark-margin': duration({
      description: "MySQL --claim-from mark: the mark trails the clock by this (default 2s); an insert open longer is sent by the walk every --lease",
      helpValue: 'DURATION',
      allowZero: true,
    }),
    'lease-by': Flags.string({
      description: "row: the claim writes a lease on its rows; transaction (PostgreSQL): its transaction holds them through the publish, one write per event (ends with the connection, or after --lease idle)",
      options: ['row', 'transaction'],
      default: 'row',
    }),
    poll: duration({description: 'how often an idle relay looks for new events', default: '1s', helpValue: 'DURATION'}),
    listen: Flags.boolean({description: 'PostgreSQL: also wake on the producer NOTIFY (polling stays the source of truth)', default: true, allowNo: true}),
    once: Flags.boolean({description: 'drain what is deliverable now, then exit (0: nothing left pending or failed, 1: some are)'}),
    owner: Flags.string({description: 'lease owner written to lease_owner (default host:pid:random)'}),
    'log-format': Flags.string({description: 'log lines on stderr', options: ['text', 'json'], default: 'text'}),
    quiet: Flags.boolean({description: 'log warnings and errors only, not one line per batch'}),
    'metrics-port': nonNegativeInt({description: 'serve Prometheus metrics on http://HOST:PORT/metrics (0: any free port)', helpValue: 'PORT', max: 65_535}),
    'metrics-host': Flags.string({description: 'address the metrics server binds', default: '127.0.0.1', helpValue: 'HOST'}),
    exchange: Flags.string({description: 'amqp: topic exchange (default outbox); the routing key is the event type', helpGroup: 'PUBLISHER'}),
    'subject-prefix': Flags.string({description: 'nats: subject = prefix + event type', helpGroup: 'PUBLISHER'}),
    stream: Flags.string({description: 'nats: JetStream stream to create if missing; redis: stream key (default outbox)', helpGroup: 'PUBLISHER'}),
    cloudevents: Flags.string({description: 'http: CloudEvents mode', options: ['structured', 'binary'], default: 'structured', helpGroup: 'PUBLISHER'}),
    source: Flags.string({description: 'http: CloudEvents source attribute (default outbox)', helpGroup: 'PUBLISHER'}),
    header: Flags.string({description: 'http: extra request header "Name: value" (repeatable; never logged)', multiple: true, helpGroup: 'PUBLISHER'}),
    'http-concurrency': positiveInt({description: 'http: requests in flight per batch (default 16)', helpGroup: 'PUBLISHER', max: 10_000, emptyIsUnset: true}),
    'publish-timeout': duration({
      description: 'per request / broker acknowledgement (default 10s http and amqp, 5s nats and redis)',
      helpGroup: 'PUBLISHER',
      helpValue: 'DURATION',
      emptyIsUnset: true,
    }),
  }

  async run() {
    const {flags} = await this.parse(RelayCommand)
    const settings = await resolveConnection({url: flags.url, config: flags.config, ...tableNamesFrom(flags)})
    this.secretUrl = settings.url
    if (flags.publisher === 'stdout' && this.jsonEnabled()) throw new UsageError('--json and --publisher stdout both write to stdout', 'Drop --json, or publish elsewhere')
    if (flags['max-batch'] !== undefined && flags['max-batch'] < flags.batch) throw new UsageError(`--max-batch ${flags['max-batch']} is below --batch ${flags.batch}`, 'Raise --max-batch, or lower --batch')
    const publisher = await publisherOptions(flags)
    const relay = {
      batch: flags.batch,
      maxBatch: flags['max-batch'],
      leaseMs: flags.lease,
      maxAttempts: flags['max-attempts'],
      backoff: flags.backoff,
      concurrency: flags.concurrency,
      ordering: flags.ordering as 'none' | 'aggregate',
      claimFrom: flags['claim-from'] as 'mark' | 'start' | undefined,
      markMarginMs: flags['mark-margin'],
      leaseBy: flags['lease-by'] as 'row' | 'transaction',
      pollMs: flags.poll,
      listen: flags.listen,
      owner: flags.owner,
    }
    const {runRelayService} = await import('../src/relay/service.js')
    const result = await runRelayService({
      url: settings.url,
      tables: settings.tables,
      publisher: publisher.name,
      publisherOptions: publisher.options,
      target: publisher.target,
      relay,
      once: flags.once,
      logFormat: flags['log-format'] as 'text' | 'json',
      quiet: flags.quiet,
      metricsPort: flags['metrics-port'],
      metricsHost: flags['metrics-host'],
    })
    // --timeout stops the run as SIGTERM does, and its own line said why: exit 2, as documented
    const exitCode = hasTimedOut() ? EXIT.usage : result.exitCode
    if (exitCode !== 0) {
      if (this.jsonEnabled()) this.logJson({...result, exitCode})
      if (result.reason && !hasTimedOut()) process.stderr.write(`outbox: ${result.reason}\n`)
      this.exit(exitCode)
    }
    return result
  }
}
