// Bundles the chaos worker (dist/src/chaos/workers/worker.js with the project's modules it loads)
// into one file beside it: a pooled worker process then loads one module rather than about a
// hundred, about a third less start-up CPU (a default chaos run starts 15-25 of them on a machine
// of two cores). Packages (drivers, Kysely) stay external, loaded from node_modules as before.
import {build} from 'esbuild'

const dir = new URL('../dist/src/chaos/workers/', import.meta.url).pathname
await build({
  entryPoints: [`${dir}worker.js`],
  outfile: `${dir}worker.bundle.js`,
  bundle: true,
  platform: 'node',
  format: 'esm',
  packages: 'external',
  logLevel: 'warning',
})
console.log('dist/src/chaos/workers/worker.bundle.js: the chaos worker in one file')
