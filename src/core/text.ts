// Text that came from outside (event types, ids, last_error written from a broker's or an HTTP
// receiver's reply) on its way to a terminal or a column: control characters shown, never
// obeyed, and cut to a length without splitting a character.

// C0 and C1 controls, DEL, and the bidirectional overrides that reorder what a terminal shows
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/gu
const UNSAFE_BUT_LINES = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/gu

const escaped = (ch: string) => `\\u${ch.codePointAt(0)!.toString(16).padStart(4, '0')}`

/**
 * The text with every control character written out as \uXXXX (ESC cannot clear the screen or
 * retitle the window). `lines`: newlines and tabs stay, for text printed in full.
 */
export function printable(text: string, {lines = false} = {}): string {
  return text.replace(lines ? UNSAFE_BUT_LINES : UNSAFE, escaped)
}

/** At most `max` characters (code points: a cut never splits a surrogate pair), ending in … when cut. */
export function clip(text: string, max: number): string {
  if (text.length <= max) return text
  const chars = Array.from(text)
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join('')}…`
}
