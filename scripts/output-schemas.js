// Writes schemas/output/<name>.schema.json: the JSON Schema of what each command prints with
// --json, made from the TypeScript type the command returns, so the schema cannot drift from
// the code (test/cli/json-output.test.ts validates every command's real output against it).
import {mkdirSync, writeFileSync} from 'node:fs'
import {createGenerator} from 'ts-json-schema-generator'

const root = new URL('..', import.meta.url).pathname
/** schema name -> [source file, exported type]; `sql` covers the four sql commands */
export const OUTPUTS = {
  init: ['commands/init.ts', 'InitOutput'],
  sql: ['src/cli/sql-command.ts', 'SqlOutput'],
  verify: ['src/verify/types.ts', 'CheckResult'],
  status: ['commands/status.ts', 'StatusOutput'],
  failed: ['src/ops/failed.ts', 'FailedList'],
  'failed-show': ['src/ops/failed.ts', 'ShownEvent'],
  replay: ['src/ops/replay.ts', 'ReplayOutput'],
  archive: ['src/ops/archive.ts', 'ArchiveOutput'],
  partitions: ['commands/partitions.ts', 'PartitionsOutput'],
  relay: ['src/relay/service.ts', 'RelayServiceResult'],
  consume: ['src/consume/loop.ts', 'ConsumeSummary'],
  chaos: ['src/chaos/report.ts', 'ChaosReport'],
  config: ['commands/config.ts', 'ConfigReport'],
  version: ['commands/version.ts', 'VersionReport'],
  error: ['src/cli/base.ts', 'ErrorOutput'],
}

mkdirSync(`${root}schemas/output`, {recursive: true})
// one program for every type: the files import each other, a program each would parse them 14 times
const generator = createGenerator({path: `${root}{commands,src}/**/*.ts`, tsconfig: `${root}tsconfig.json`, skipTypeCheck: true, expose: 'none', topRef: false, jsDoc: 'basic', additionalProperties: false})
for (const [name, [, type]] of Object.entries(OUTPUTS)) {
  const schema = generator.createSchema(type)
  // verify prints a list of its checks
  const top = name === 'verify' ? {type: 'array', items: schema} : schema
  writeFileSync(`${root}schemas/output/${name}.schema.json`, `${JSON.stringify({$id: `https://github.com/outbox/outbox/schemas/output/${name}.schema.json`, title: `outbox ${name.replace('-', ' ')} --json`, ...top}, null, 2)}\n`)
}
console.log(`schemas/output: ${Object.keys(OUTPUTS).length} schemas`)
