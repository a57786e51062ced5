import {Flags} from '@oclif/core'
import {hasTimedOut, OutboxCommand} from '../src/cli/base.js'
import {connectionFlags, duration, positiveInt, tableFlags, tableNamesFrom} from '../src/cli/flags.js'
import {resolveConnection} from '../src/config.js'
import {EXIT, SIGNAL_EXIT, UsageError, type StopSignal} from '../src/core/errors.js'
import type {ConsumeSummary} from '../src/consume/loop.js'

export default class ConsumeCommand extends OutboxCommand {
  static override summary = 'Consume what the relay published: each event applied once through the inbox, acked only after its transaction committed'
  static override description = `Reads from the broker --from names (amqp://, nats://, redis://, or http://HOST:PORT/PATH to receive the relay's POSTs) and runs the --handler module's default export, async (event, tx) => void, in one database transaction with the inbox row for (--consumer, event id): a redelivered event is skipped as a duplicate. tx is the driver's own object inside that transaction: the pg client (postgres://), the mysql2/promise connection (mysql://), the better-sqlite3 Database (sqlite:), as an app's own pool hands it to a Consumer effect. The broker's message is acknowledged only after that transaction committed. Messages that arrived while a transaction ran share the next one (up to --batch, default 16): their inbox rows in one INSERT, then the handler for each new one; a handler error undoes its own message alone (the batch runs again with a savepoint per message, the handlers before it called a second time); one COMMIT for all of them, then every ack; a failed COMMIT acks none (they are delivered again, the inbox skips what had committed). With --check-version each message has a transaction of its own.

A handler error gives the message back for another delivery after --retry-delay; at --max-attempts deliveries it is dead-lettered (RabbitMQ: the queue's dead-letter exchange into <queue>.dead-letter; NATS: +TERM; Redis: the stream <stream>:dead; HTTP: a 500, so the relay retries and fails the event after its own --max-attempts). A message that is no outbox event is dead-lettered at once. A database that cannot be reached dead-letters nothing: the message is held until it answers.

Runs until SIGTERM or SIGINT (then the transactions in flight finish, each with its whole batch, and are acked; nothing else is; exit 0), or until --max-events messages were settled: exit 0 when every one was applied (or skipped as a duplicate or stale), 1 when some were dead-lettered, with one line saying how many; a signal before that exits 143/130. Logs go to stderr, the summary to stdout (--json for JSON).

Exit codes: 0 stopped by SIGTERM/SIGINT, or --max-events settled with none dead-lettered, 1 --max-events settled with some dead-lettered, 2 bad input, an unreachable database or broker, a broker connection lost or --timeout reached, 130/143 stopped by SIGINT/SIGTERM before --max-events.`
  static override examples = [
    '<%= config.bin %> consume --url postgres://app@db/app --from amqp://guest:guest@mq:5672 --consumer billing --handler ./billing.js',
    '<%= config.bin %> consume --from nats://127.0.0.1:4222 --stream ORDERS --subject "orders.>" --consumer shipping --handler ./shipping.js --concurrency 4',
    '<%= config.bin %> consume --from redis://127.0.0.1:6379 --stream outbox --consumer search --handler ./index-order.js',
    '<%= config.bin %> consume --from http://0.0.0.0:8080/events --consumer billing --handler ./billing.js',
    '<%= config.bin %> consume --from amqp://127.0.0.1 --consumer billing --handler ./billing.js --max-events 100 --json',
  ]
  static override enableJsonFlag = true
  static override defaultTimeoutMs = undefined
  static override flags = {
    ...connectionFlags,
    ...tableFlags,
    from: Flags.string({description: 'broker URL (amqp://, nats://, redis://) or http://HOST:PORT/PATH to listen on', required: true, helpValue: 'URL'}),
    consumer: Flags.string({description: 'the consumer\'s name: dedupe is per (consumer, event id); also the default queue, durable or group', required: true, helpValue: 'NAME'}),
    handler: Flags.string({description: 'module whose default export is async (event, tx) => void; tx: the pg client, mysql2 connection or better-sqlite3 Database in the transaction', required: true, helpValue: 'FILE'}),
    concurrency: positiveInt({description: 'messages handled at once', default: '1', helpValue: 'N', max: 256}),
    batch: positiveInt({description: `most messages in one inbox transaction (default 16): those received while the last one ran, their inbox rows in one INSERT (a handler error undoes that message alone: the batch runs again, a savepoint each), one COMMIT, every ack after it; 1: a transaction per message. Not for http://`, helpValue: 'N', max: 64}),
    'max-events': positiveInt({description: 'stop after this many messages were settled (acked or dead-lettered)', helpValue: 'N', max: Number.MAX_SAFE_INTEGER}),
    'max-attempts': positiveInt({description: 'deliveries of a message whose handler fails before it is dead-lettered', default: '5', helpValue: 'N', max: 1000}),
    'retry-delay': duration({description: 'wait before a message whose handler failed is delivered again', default: '1s', helpValue: 'DURATION'}),
    'check-version': Flags.boolean({description: 'skip (as stale) an event whose aggregate version is not above the last one applied'}),
    'log-format': Flags.string({description: 'log lines on stderr', options: ['text', 'json'], default: 'text'}),
    quiet: Flags.boolean({description: 'log warnings and errors only'}),
    queue: Flags.string({description: 'amqp: the queue (default: --consumer), a quorum queue bound to --exchange', helpGroup: 'BROKER'}),
    exchange: Flags.string({description: 'amqp: the relay\'s topic exchange (default outbox)', helpGroup: 'BROKER'}),
    'binding-key': Flags.string({description: 'amqp: the binding key (default #: every event type)', helpGroup: 'BROKER'}),
    declare: Flags.boolean({description: 'amqp: declare the queue, the exchanges and the binding (--no-declare: use the queue as it is)', default: true, allowNo: true, helpGroup: 'BROKER'}),
    stream: Flags.string({description: 'nats: the relay\'s JetStream stream (required); redis: the stream key (default outbox)', helpGroup: 'BROKER'}),
    subject: Flags.string({description: 'nats: only subjects matching this filter, e.g. orders.>', helpGroup: 'BROKER'}),
    'ack-wait': duration({description: 'nats: AckWait of the durable consumer (default 30s)', helpGroup: 'BROKER', helpValue: 'DURATION'}),
    'claim-idle': duration({description: 'redis: take over entries another consumer left pending this long (default 30s)', helpGroup: 'BROKER', helpValue: 'DURATION'}),
    instance: Flags.string({description: 'redis: this process\'s name in the group (default host-pid)', helpGroup: 'BROKER'}),
  }

  async run() {
    const {flags} = await this.parse(ConsumeCommand)
    const {brokerKind} = await import('../src/consume/index.js')
    const kind = brokerKind(flags.from)
    this.secretUrl = flags.from
    const only: Record<string, string[]> = {amqp: ['queue', 'exchange', 'binding-key'], nats: ['stream', 'subject', 'ack-wait'], redis: ['stream', 'claim-idle', 'instance'], http: []}
    for (const name of ['queue', 'exchange', 'binding-key', 'subject', 'ack-wait', 'claim-idle', 'instance', 'stream'] as const) {
      if (flags[name] !== undefined && !only[kind].includes(name)) throw new UsageError(`--${name} does not apply to ${kind}`, `It is for ${Object.keys(only).filter((k) => only[k].includes(name)).join(' and ')}`)
    }
    if (flags.declare === false && kind !== 'amqp') throw new UsageError(`--no-declare does not apply to ${kind}`, 'It is for amqp')
    if (flags.batch !== undefined && kind === 'http') throw new UsageError('--batch does not apply to http', 'Over HTTP each request is answered after a transaction of its own')
    if (kind === 'nats' && !flags.stream) throw new UsageError('--from nats:// needs --stream', 'e.g. --stream ORDERS, the relay\'s --stream')
    const options = {
      concurrency: flags.concurrency,
      maxBatch: flags.batch,
      maxEvents: flags['max-events'],
      maxAttempts: flags['max-attempts'],
      retryDelayMs: flags['retry-delay'],
    }
    const broker = {
      queue: flags.queue,
      exchange: flags.exchange,
      bindingKey: flags['binding-key'],
      declare: flags.declare,
      stream: flags.stream,
      subject: flags.subject,
      ackWaitMs: flags['ack-wait'],
      claimIdleMs: flags['claim-idle'],
      consumerName: flags.instance,
    }
    const settings = await resolveConnection({url: flags.url, config: flags.config, ...tableNamesFrom(flags)})
    this.secretUrl = settings.url // the runtimes scrub the broker's password from their own errors
    const handler = await (await import('../src/consume/handler-module.js')).loadHandler(flags.handler)

    const {stopOnSignal} = await import('../src/cli/signals.js')
    const stop = stopOnSignal({
      first: (signal) => `${signal}: finishing the events in flight, then stopping (nothing uncommitted is acked)`,
      second: (signal) => `${signal} again: exiting now; the events in flight were not committed and will be delivered again`,
    })
    const {runConsumeService} = await import('../src/consume/service.js')
    let summary
    try {
      summary = await runConsumeService({url: settings.url, tables: settings.tables, from: flags.from, broker, consumer: flags.consumer, handler, ...options, checkVersion: flags['check-version'], signal: stop.signal, logFormat: flags['log-format'] as 'text' | 'json', quiet: flags.quiet})
    } finally {
      stop.dispose()
    }
    const s = summary
    if (!this.jsonEnabled()) process.stdout.write(`consumed ${s.settled} event(s): ${s.applied} applied, ${s.duplicate} duplicate, ${s.stale} stale, ${s.deadLettered} dead-lettered; ${s.retried} handler failure(s) retried\n`)
    const exitCode = consumeExit(summary, options.maxEvents, stop.received)
    if (exitCode !== 0) {
      if (exitCode === EXIT.check) process.stderr.write(`outbox: ${s.deadLettered} of ${s.settled} message(s) dead-lettered: their handler kept failing, or they were no outbox events (the warnings above say which)\n`)
      if (this.jsonEnabled()) this.logJson(summary)
      this.exit(exitCode)
    }
    return summary
  }
}

/**
 * A signal ends a service normally (0); with --max-events it means the work was not done
 * (130/143, or 2 after --timeout, whose line said why). A bounded run that dead-lettered
 * messages did not apply them all: 1, as relay --once with failed events.
 */
function consumeExit(summary: ConsumeSummary, maxEvents: number | undefined, signal: StopSignal | undefined): number {
  if (hasTimedOut()) return EXIT.usage
  if (maxEvents === undefined) return EXIT.ok
  if (signal && summary.settled < maxEvents) return SIGNAL_EXIT[signal]
  return summary.deadLettered > 0 ? EXIT.check : EXIT.ok
}
