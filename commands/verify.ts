import {Flags} from '@oclif/core'
import {hasTimedOut, OutboxCommand} from '../src/cli/base.js'
import {SIGNAL_EXIT, stopOnSignal} from '../src/cli/signals.js'
import {connectionFlags, positiveInt} from '../src/cli/flags.js'
import {dialectOfUrl, resolveConnection} from '../src/config.js'
import {EXIT} from '../src/core/errors.js'
import type {CheckResult} from '../src/verify/types.js'
import type {PartitionInterval} from '../dialects/index.js'
import {PARTITION_INTERVALS} from '../src/schema/partition-ranges.js'

export default class Verify extends OutboxCommand {
  static override summary = 'Prove the claim semantics on a live database, on a scratch table it creates and drops'
  static override description = `Creates a scratch table (outbox_verify_<random>, the normal DDL), runs the relay's own claim against it and drops it again, also on failure or Ctrl-C. Your tables and data are never touched.

Checks: server version and SKIP LOCKED; READ COMMITTED; N concurrent claimers over M events with no double claim; a second session gets other rows at once (SQLite: waits for the single writer); a lapsed lease is taken over; a claim carrying the previous batch's mark publishes those events in its commit and takes the next ones; LIMIT holds (PostgreSQL: with stale statistics); MySQL/MariaDB: the claim's ORDER BY is served by an index and a producer INSERT is not blocked by a claim.

Exit codes: 0 every check passed, 1 a check failed (each failure also a line on stderr), 2 bad input, an unreachable database or --timeout reached, 130/143 stopped by SIGINT/SIGTERM (the scratch table dropped first).`
  static override examples = [
    '<%= config.bin %> verify --url postgres://postgres@127.0.0.1:5432/app',
    '<%= config.bin %> verify --url mysql://root@127.0.0.1:3306/app --claimers 8 --events 5000',
    '<%= config.bin %> verify --url sqlite:./app.db --json',
  ]
  static override enableJsonFlag = true
  static override flags = {
    ...connectionFlags,
    schema: Flags.string({description: 'PostgreSQL schema for the scratch table (default: the search_path)', helpValue: 'NAME'}),
    claimers: positiveInt({description: 'concurrent claimers, each on its own connection', default: '4', max: 64}),
    events: positiveInt({description: 'events the claimers share', default: '1000', max: 100_000}),
    'partition-by': Flags.string({description: 'verify on a scratch table partitioned as init --partition-by makes it (PostgreSQL, MySQL/MariaDB)', options: [...PARTITION_INTERVALS]}),
  }

  async run(): Promise<CheckResult[]> {
    const {flags} = await this.parse(Verify)
    const {claimers, events} = flags
    const {url} = await resolveConnection({url: flags.url, config: flags.config, schema: flags.schema})
    this.secretUrl = url
    await (await dialectOfUrl(url)).driver.requireExisting?.(url)
    const [{verify}, {Interrupted}] = await Promise.all([import('../src/verify/run.js'), import('../src/verify/context.js')])
    const {progressLine, renderVerifyTable} = await import('../src/render/verify.js')
    const progress = progressLine()
    const stop = stopOnSignal({
      first: (signal) => `${signal}: stopping; dropping the scratch table (send it again to quit at once)`,
      second: (signal) => `${signal} again: quitting now; a scratch table outbox_verify_* may be left to drop by hand`,
    })
    try {
      const report = await verify(url, {claimers, events, schema: flags.schema, partitionBy: flags['partition-by'] as PartitionInterval | undefined, onProgress: progress.update, signal: stop.signal}).catch((error) => {
        // stopped: 2 after --timeout (its line said why), else 128 + the signal's number
        if (error instanceof Interrupted && stop.received) throw new Interrupted(hasTimedOut() ? EXIT.usage : SIGNAL_EXIT[stop.received])
        throw error
      })
      progress.clear()
      if (this.jsonEnabled()) {
        if (report.ok) return report.checks
        this.logJson(report.checks)
      } else {
        this.log(await renderVerifyTable(report.checks))
      }
      const failed = report.checks.filter((c) => c.status === 'fail')
      if (failed.length === 0) {
        this.log(`verify passed on ${report.dialect} ${report.version}; scratch table ${report.scratchTable} dropped`)
        return report.checks
      }
      for (const c of failed) process.stderr.write(`outbox: verify failed: ${c.title}: ${c.detail}\n`)
      this.exit(EXIT.check)
    } finally {
      progress.clear()
      stop.dispose()
    }
    return []
  }
}
