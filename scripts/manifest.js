// Writes oclif.manifest.json so that start-up imports only the command being run,
// instead of every command file (what `oclif manifest` does, without its dependencies).
import {writeFileSync} from 'node:fs'
import {Plugin} from '@oclif/core'

const root = new URL('..', import.meta.url).pathname
const plugin = new Plugin({root, type: 'core', ignoreManifest: true, errorOnManifestCreate: true, isRoot: true})
await plugin.load()
writeFileSync(new URL('../oclif.manifest.json', import.meta.url), JSON.stringify(plugin.manifest))
console.log(`oclif.manifest.json: ${Object.keys(plugin.manifest.commands).length} commands`)
