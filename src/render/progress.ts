// Progress of a batched run on stderr: one redrawn line on a terminal, otherwise a plain line
// at most every few seconds (so a cron log stays readable at a million rows).
import type {Progress} from '../ops/batches.js'

export function progressLine(verb: string, total: number | undefined, stream: NodeJS.WriteStream = process.stderr, plainEveryMs = 5000, redrawEveryMs = 100) {
  const tty = Boolean(stream.isTTY)
  const started = Date.now()
  let lastPlain = started
  let lastDrawn = 0
  let drawn = false
  const text = (p: Progress) => {
    const seconds = (Date.now() - started) / 1000
    const rate = seconds > 0 ? Math.round(p.changed / seconds) : 0
    const of = total ? ` of ${total} (${Math.min(100, Math.floor((p.changed / total) * 100))}%)` : ''
    return `${verb} ${p.changed}${of}, ${p.batches} batch(es), ${rate} rows/s`
  }
  return {
    update(p: Progress) {
      if (tty) {
        // small batches come back hundreds of times a second: redraw ten times a second at most
        if (Date.now() - lastDrawn < redrawEveryMs) return
        stream.write(`\r\x1b[K${text(p)}`)
        lastDrawn = Date.now()
        drawn = true
      } else if (Date.now() - lastPlain >= plainEveryMs) {
        stream.write(`${text(p)}\n`)
        lastPlain = Date.now()
      }
    },
    done() {
      if (drawn) stream.write('\r\x1b[K')
    },
  }
}
