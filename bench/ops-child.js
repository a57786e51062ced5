// One replay or archive run in its own process, so its peak RSS is its own:
// node bench/ops-child.js '{"op":"archive","url":"...","names":{...},"options":{...}}'
// prints {changed, seconds, maxRssMb, maxBatchMs, liveHeapMb} as JSON. With `gcEvery` (and node
// --expose-gc) it collects garbage fully every that many batches and reports the heap still
// live after it (first, last, max sample): what the run keeps, apart from V8's sizing.
import {archive, openDb, replay} from './lib-under-test.js'

const {op, url, names, options, gcEvery} = JSON.parse(process.argv[2])
const db = await openDb(url)
let last = performance.now()
let maxBatchMs = 0
const live = []
const onProgress = (progress) => {
  if (gcEvery && progress.batches % gcEvery === 0) {
    globalThis.gc()
    live.push(process.memoryUsage().heapUsed / 2 ** 20)
  }
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
const liveHeapMb = live.length ? {first: live[0], last: live[live.length - 1], max: Math.max(...live), samples: live.length} : undefined
process.stdout.write(JSON.stringify({changed, seconds, maxRssMb: process.resourceUsage().maxRSS / 1024, maxBatchMs, liveHeapMb}) + '\n')
