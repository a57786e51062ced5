// Preloaded with `node --require`: at exit, writes the files of every CommonJS module the
// process loaded (drivers are CommonJS, also when imported from ESM) to $OUTBOX_LOADED_MODULES.
const {writeFileSync} = require('node:fs')
const Module = require('node:module')

process.on('exit', () => {
  writeFileSync(process.env.OUTBOX_LOADED_MODULES, Object.keys(Module._cache).join('\n'))
})
