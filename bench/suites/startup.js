// Start-up: `outbox init --dialect postgres` (needs no database, so must import no driver)
// against an oclif CLI with one empty command, both with a manifest. Runs are interleaved,
// alternating which goes first, so load on this shared machine hits both alike.
import {spawnSync} from 'node:child_process'
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {Plugin} from '@oclif/core'
import {fmt, median, summary} from '../lib.js'
import {BIN} from '../tree.js'

const root = new URL('../..', import.meta.url).pathname
const fixture = join(root, 'bench/fixtures/empty-cli')
const TARGET = 1.3

const commands = {
  outbox: [BIN, 'init', '--dialect', 'postgres'],
  empty: [join(fixture, 'bin/run.js'), 'noop'],
}

/** The fixture gets a manifest the way ours does (scripts/manifest.js), so both skip the command scan. */
async function writeFixtureManifest() {
  const plugin = new Plugin({root: fixture, type: 'core', ignoreManifest: true, errorOnManifestCreate: true, isRoot: true})
  await plugin.load()
  writeFileSync(join(fixture, 'oclif.manifest.json'), JSON.stringify(plugin.manifest))
}

function timeOnce(args) {
  const start = process.hrtime.bigint()
  const r = spawnSync(process.execPath, args, {stdio: ['ignore', 'ignore', 'pipe'], env: {...process.env, NO_COLOR: '1'}})
  const ms = Number(process.hrtime.bigint() - start) / 1e6
  if (r.status !== 0) throw new Error(`${args.slice(1).join(' ')} exited ${r.status}: ${r.stderr}`)
  return ms
}

export default async function startup({quick, log}) {
  await writeFixtureManifest()
  const runs = quick ? 10 : 40
  const times = {outbox: [], empty: []}
  const ratios = []
  for (const name of Object.keys(commands)) timeOnce(commands[name]) // warm the file cache
  for (let i = 0; i < runs; i++) {
    const order = i % 2 ? ['outbox', 'empty'] : ['empty', 'outbox']
    const pair = {}
    for (const name of order) pair[name] = timeOnce(commands[name])
    times.outbox.push(pair.outbox)
    times.empty.push(pair.empty)
    ratios.push(pair.outbox / pair.empty)
  }
  const outbox = summary(times.outbox)
  const empty = summary(times.empty)
  const ratio = outbox.median / empty.median
  const pairRatio = median(ratios)
  const verdict = ratio <= TARGET ? `within the ${TARGET}x target` : `MISSES the ${TARGET}x target`
  log(`outbox median ${fmt(outbox.median)} ms, empty median ${fmt(empty.median)} ms, ratio ${fmt(ratio, 2)}x (${verdict})`)
  const row = (label, s) => `| ${label} | ${fmt(s.median)} | ${fmt(s.min)} | ${fmt(s.max)} |`
  const markdown = `\`outbox init --dialect postgres\` against an oclif CLI with one empty command
(\`bench/fixtures/empty-cli\`, same @oclif/core, also with a manifest): ${runs} interleaved
runs of each, wall time of the whole process (\`node bin/run.js ...\`), alternating which runs first.

| command | median ms | min ms | max ms |
|---|---:|---:|---:|
${row('`outbox init --dialect postgres`', outbox)}
${row('empty oclif command', empty)}

Ratio of medians: **${fmt(ratio, 2)}x** (median of per-pair ratios ${fmt(pairRatio, 2)}x), ${verdict}.
No database driver is imported (\`test/cli/commands.test.ts\` checks that pg, mysql2 and better-sqlite3 stay unloaded).`
  return {title: 'Start-up: outbox init vs an empty oclif command', markdown, raw: {runs, target: TARGET, ratio, pairRatio, outbox, empty, times, ratios}}
}

/** The figures `npm run bench -- compare` puts side by side: outbox init against the empty oclif command. */
export function headline(raw) {
  return [
    {key: 'outbox/empty', label: `outbox init / empty oclif command (ratio of medians, ${raw.runs} runs each)`, value: raw.ratio, better: 'lower'},
    {key: 'outbox/empty pairs', label: 'outbox init / empty oclif command (median of per-pair ratios)', value: raw.pairRatio, better: 'lower'},
    {key: 'outbox ms', label: 'outbox init, median ms (absolute: moves with the machine)', value: raw.outbox.median, better: 'lower'},
  ]
}
