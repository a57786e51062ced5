// One replay or archive run in its own process, so its peak RSS is its own:
// node bench/ops-child.js '{"op":"archive","url":"...","names":{...},"options":{...}}'
// prints {changed, seconds, maxRssMb, maxBatchMs} as JSON.
import {archive, openDb, replay} from '../dist/src/index.js'

const {op, url, names, options} = JSON.parse(process.argv[2])
const db = await openDb(url)
let last = performance.now()
let maxBatchMs = 0
const onProgress = () => {
  const t = performance.now()
  maxBatchMs = Math.max(maxBatchMs, t - last)
  last = t
}
const started = performance.now()
last = started
const result = op === 'archive' ? await archive(db, names, {...options, onProgress}) : await replay(db, names, {...options, onProgress})
const seconds = (performance.now() - started) / 1000
await db.close()
const changed = op === 'archive' ? result.archived : result.replayed
process.stdout.write(JSON.stringify({changed, seconds, maxRssMb: process.resourceUsage().maxRSS / 1024, maxBatchMs}) + '\n')
