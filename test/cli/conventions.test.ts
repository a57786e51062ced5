// What users expect of an oclif CLI: version three ways, "Did you mean" for a mistyped flag as
// for a mistyped command, and shell completion through oclif's autocomplete plugin.
import {spawnSync} from 'node:child_process'
import {mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, describe, expect, it} from 'vitest'
import {cli} from '../helpers/cli.js'

const root = new URL('../..', import.meta.url).pathname
const {version} = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {version: string}

describe('version', () => {
  it('outbox version, --version and -v print the same line', () => {
    const line = `outbox/${version} ${process.platform}-${process.arch} node-v${process.versions.node}`
    for (const args of [['version'], ['--version'], ['-v']]) {
      const r = cli(args)
      expect(r.status, args.join(' ')).toBe(0)
      expect(r.stdout.trim()).toBe(line)
    }
  })
  it('--json', () => {
    const r = cli(['version', '--json'])
    expect(r.status).toBe(0)
    expect(JSON.parse(r.stdout)).toEqual({version, node: process.versions.node, platform: process.platform, arch: process.arch})
  })
})

describe('a mistyped flag', () => {
  it('is one line naming the flag it resembles, exit 2', () => {
    for (const [args, meant] of [
      [['relay', '--bach', '5'], '--batch'],
      [['status', '--max-ag', '5m'], '--max-age'],
      [['replay', '--snce', '1h'], '--since'],
    ] as const) {
      const r = cli([...args])
      expect(r.status).toBe(2)
      expect(r.stderr.trim()).toBe(`outbox: Nonexistent flag: ${args[1]}. Did you mean ${meant}?`)
    }
  })
  it('points at --help when nothing is close', () => {
    expect(cli(['status', '--zzzzzz']).stderr.trim()).toBe('outbox: Nonexistent flag: --zzzzzz. See: outbox status --help')
  })
})

describe('outbox autocomplete', () => {
  const home = mkdtempSync(join(tmpdir(), 'outbox-autocomplete-'))
  const env = {HOME: home, XDG_CACHE_HOME: join(home, 'cache')}
  afterAll(() => rmSync(home, {recursive: true, force: true}))

  it('prints the set-up for bash, zsh and powershell', () => {
    for (const shell of ['bash', 'zsh', 'powershell']) {
      const r = cli(['autocomplete', shell], {env})
      expect(r.status, r.stderr).toBe(0)
      expect(r.stdout).toContain(`outbox autocomplete script ${shell}`)
    }
  })

  it('completes our commands and their flags in a real bash', () => {
    expect(cli(['autocomplete', '--refresh-cache'], {env}).status).toBe(0)
    const script = join(home, 'cache/outbox/autocomplete/functions/bash/outbox.bash')
    const complete = (words: string[]) => {
      const r = spawnSync('bash', ['-c', `source ${script}; COMP_WORDS=(${words.join(' ')}); COMP_CWORD=${words.length - 1}; COMP_LINE="${words.join(' ')}"; _outbox_autocomplete; echo "\${COMPREPLY[@]}"`], {encoding: 'utf8'})
      expect(r.status, r.stderr).toBe(0)
      return r.stdout.trim().split(/\s+/)
    }
    expect(complete(['outbox', 'rel'])).toEqual(['relay'])
    expect(complete(['outbox', 'relay', '--ba']).sort()).toEqual(['--backoff', '--batch'])
    expect(complete(['outbox', 'con'])).toEqual(expect.arrayContaining(['config', 'consume']))
  })
})
