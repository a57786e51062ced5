// Module hooks for loaded-modules.cjs (they run on the loader's own thread): the file of each
// ES module, written as it loads, so nothing is lost however the process ends.
import {appendFileSync} from 'node:fs'
import {fileURLToPath} from 'node:url'

let file

export function initialize(data) {
  file = data.file
}

export async function load(url, context, nextLoad) {
  if (url.startsWith('file:')) appendFileSync(file, `${fileURLToPath(url)}\n`)
  return nextLoad(url, context)
}
