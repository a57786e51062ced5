// The broker rejects one event (op 0's first) every time: it must end failed after exactly max
// attempts, `outbox status` must count it, and nothing else may wait for it.
import {randomUUID} from 'node:crypto'
import {sql} from '../../../dialects/index.js'
import {tableRef} from '../tables.js'
import type {FaultScenario} from './types.js'

export const poison: FaultScenario<'poison'> = {
  name: 'poison',
  description: 'the broker rejects one event every time: it ends failed after max attempts and blocks nothing else',
  kind: 'scenario',
  loopbackOnly: true,
  needsRelay: true,
  arm(run) {
    const id = randomUUID()
    run.ids['0'] = id
    run.expectFailed.add(id)
    run.loopback?.reject(id)
    run.relay.maxAttempts = 3
    // what `outbox status` runs, loaded while the run goes rather than after it
    const status = import('../../ops/status.js')
    status.catch(() => {})
    return {
      async exercised() {
        const {db, tables} = run
        const {maxAttempts} = run.relay
        const [row] = await db.query<{attempts: unknown; failed_at: unknown}>(
          sql`SELECT attempts, failed_at FROM ${tableRef(db.dialect, tables.outbox.outbox)} WHERE id = ${id}`,
        )
        if (!row) return {missed: 'the poison event was never committed'}
        if (row.failed_at == null) return {} // the invariants already report it stuck
        if (Number(row.attempts) !== maxAttempts) {
          return {violations: [{invariant: 'nothing-stuck', message: `the poison message failed after ${row.attempts} attempts, not max attempts (${maxAttempts})`, count: 1, witnesses: [id]}]}
        }
        // and `outbox status` sees it: the same figures the command prints
        const {readStatus} = await status
        const {failed} = await readStatus(db, tables.outbox, {windowMs: 60_000})
        if (failed === 1) return {}
        return {violations: [{invariant: 'nothing-stuck', message: `outbox status reports ${failed} failed events, expected the poison message only`, count: 1, witnesses: [id]}]}
      },
    }
  },
}
