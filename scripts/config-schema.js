// Writes schemas/config.schema.json from oclif.manifest.json: the config file's keys are the
// commands' flags, so the schema is made from them and cannot drift. Editors complete with it
// ("$schema": "./node_modules/outbox/schemas/config.schema.json").
import {readFileSync, writeFileSync} from 'node:fs'
// the same names the CLI reads the file with (run after tsc, so dist/ is there)
import {keyOf, NO_SECTION, NOT_IN_FILE, sectionOf, SHARED_FLAGS} from '../dist/src/cli/settings/keys.js'

const root = new URL('..', import.meta.url)
const manifest = JSON.parse(readFileSync(new URL('oclif.manifest.json', root), 'utf8'))

/** A flag's value as the file may write it: what the command line takes, typed where JSON can say more. */
function valueSchema(flag) {
  const description = flag.description + (flag.default !== undefined ? ` (default ${flag.default})` : '')
  if (flag.type === 'boolean') return {type: 'boolean', description}
  const one = flag.options ? {enum: flag.options} : flag.helpValue === 'N' ? {type: ['integer', 'string']} : {type: ['string', 'number']}
  return flag.multiple ? {description, anyOf: [{type: 'array', items: one}, one]} : {description, ...one}
}

const commands = Object.values(manifest.commands)
  .filter((c) => !c.hidden && !NO_SECTION.has(c.id))
  .sort((a, b) => a.id.localeCompare(b.id))
const shared = Object.fromEntries(
  SHARED_FLAGS.map((flag) => {
    const owner = commands.find((c) => c.flags[flag])
    return [keyOf(flag), {...valueSchema(owner.flags[flag]), description: `${owner.flags[flag].description}; every command with --${flag}`}]
  }),
)
const sections = Object.fromEntries(
  commands.map((c) => [
    sectionOf(c.id),
    {
      type: 'object',
      description: `outbox ${sectionOf(c.id)}: ${c.summary ?? ''}`.trim(),
      additionalProperties: false,
      properties: Object.fromEntries(Object.values(c.flags).filter((f) => !NOT_IN_FILE.has(f.name)).map((f) => [keyOf(f.name), valueSchema(f)])),
    },
  ]),
)
const schema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://github.com/outbox/outbox/schemas/config.schema.json',
  title: 'outbox.config.json',
  description: 'Settings for the outbox CLI: the connection and table names at the top, a section per command. A flag beats OUTBOX_* variables, which beat this file, which beats DATABASE_URL and the defaults. ${NAME} in a string reads the environment.',
  type: 'object',
  additionalProperties: false,
  properties: {$schema: {type: 'string'}, ...shared, ...sections},
}
writeFileSync(new URL('schemas/config.schema.json', root), `${JSON.stringify(schema, null, 2)}\n`)
console.log(`schemas/config.schema.json: ${commands.length} sections`)
