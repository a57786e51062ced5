// render/events: one table cell of outside text (an error, a type), cut and made safe to print.
import {describe, expect, it} from 'vitest'
import {cell} from '../../src/render/events.js'

describe('cell', () => {
  it('keeps the first line and marks what was cut', () => {
    expect(cell('short')).toBe('short')
    expect(cell('first\n  at stack')).toBe('first …')
    expect(cell('\n\nError: boom\n  at x')).toBe('Error: boom …')
    expect(cell('x'.repeat(100), 10)).toBe('xxxxxxxxx…')
    expect(cell(null)).toBe('')
  })
  it('never splits a character and shows control characters instead of sending them', () => {
    expect(cell('a'.repeat(58) + '🚀🚀🚀', 60)).toBe('a'.repeat(58) + '🚀…')
    expect(cell('\u001b[2J\u001b]0;pwned\u0007 hi')).toBe('\\u001b[2J\\u001b]0;pwned\\u0007 hi')
    expect(cell('tab\there \u009b31m \u202eevil')).toBe('tab\\u0009here \\u009b31m \\u202eevil')
  })
})
