// ops/replay's selection check, before anything connects: what replay needs and refuses.
import {describe, expect, it} from 'vitest'
import {checkSelection} from '../../src/ops/replay.js'
import {UsageError} from '../../src/core/errors.js'

describe('replay selection', () => {
  it('needs --since, --ids or --failed, and refuses contradictions', () => {
    expect(() => checkSelection({})).toThrow(UsageError)
    expect(() => checkSelection({failedOnly: true, fromArchive: true})).toThrow(/exclude each other/)
    expect(() => checkSelection({ids: ['nope']})).toThrow(/not an event id/)
    expect(() => checkSelection({failedOnly: true})).not.toThrow()
  })
})
