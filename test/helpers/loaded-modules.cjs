// Preloaded with `node --require`: appends to $OUTBOX_LOADED_MODULES the file of every module
// the process loads. ES modules (Kysely is one) are seen by a load hook, one line each as they
// load; CommonJS modules (the drivers, also when imported from ESM) are listed from the
// require cache at exit.
const {appendFileSync} = require('node:fs')
const Module = require('node:module')
const {pathToFileURL} = require('node:url')

const file = process.env.OUTBOX_LOADED_MODULES
Module.register(pathToFileURL(`${__dirname}/loaded-modules-hooks.mjs`), {data: {file}})
process.on('exit', () => {
  appendFileSync(file, `${Object.keys(Module._cache).join('\n')}\n`)
})
