// The chaos history's bookkeeping: an operation its process did not live to finish is
// `unknown`, outcomes end only their own invocation, and the repeat line masks passwords.
import {describe, expect, it} from 'vitest'
import {closeOpenOperations, endsInvocation, type HistoryEntry} from '../../src/chaos/history.js'
import {repeatCommand} from '../../src/render/chaos.js'

const entry = (e: Partial<HistoryEntry> & Pick<HistoryEntry, 'at' | 'type'>): HistoryEntry => ({process: 'producer', pid: 1, ...e})

describe('chaos history', () => {
  it('an invocation still open when its process is killed becomes unknown at the kill', () => {
    const history = closeOpenOperations([
      entry({at: 1, type: 'invoke', op: 'business', detail: 'op 0'}),
      entry({at: 2, type: 'ok', op: 'business', detail: 'op 0', ids: ['a']}),
      entry({at: 3, type: 'invoke', op: 'business', detail: 'op 1'}),
      entry({at: 9, type: 'kill', detail: 'at producer.before-commit'}),
      entry({at: 10, type: 'spawn', pid: 2}),
      entry({at: 11, type: 'invoke', op: 'business', detail: 'op 1', pid: 2}),
      entry({at: 12, type: 'fail', op: 'business', detail: 'op 1: connection reset', pid: 2}),
    ])
    const unknown = history.filter((e) => e.type === 'unknown')
    expect(unknown).toEqual([entry({at: 9, type: 'unknown', op: 'business', detail: 'op 1'})])
  })

  it('an outcome ends only the invocation of the same pid, operation and subject', () => {
    const publish = entry({at: 1, type: 'invoke', op: 'publish', ids: ['a', 'b'], process: 'relay#1'})
    expect(endsInvocation(publish, {...publish, type: 'ok', ids: ['b']})).toBe(true)
    expect(endsInvocation(publish, {...publish, type: 'ok', ids: ['c']})).toBe(false)
    expect(endsInvocation(publish, {...publish, type: 'ok', pid: 2})).toBe(false)
    expect(endsInvocation(publish, {...publish, type: 'invoke'})).toBe(false)
    const op = entry({at: 1, type: 'invoke', op: 'business', detail: 'op 1'})
    expect(endsInvocation(op, {...op, type: 'fail', detail: 'op 1: timeout'})).toBe(true)
    expect(endsInvocation(op, {...op, type: 'ok', detail: 'op 11'})).toBe(false)
  })

  it('the repeat line adds the seed once and masks passwords', () => {
    expect(repeatCommand('outbox', ['--url', 'postgres://app:s3cret@db/app', '--steps', 'relay.after-send'], 42)).toBe(
      // quoted: *** would glob in a shell
      "outbox chaos --url 'postgres://app:***@db/app' --steps relay.after-send --seed 42",
    )
    expect(repeatCommand('outbox', ['--seed', '7', '--scenario', './my scenario.js'], 42)).toBe("outbox chaos --seed 7 --scenario './my scenario.js'")
  })
})
