// Runs the built CLI (./bin/run.js, after `npm run build`) as a user would.
import {spawn, spawnSync} from 'node:child_process'
import {existsSync} from 'node:fs'

const root = new URL('../..', import.meta.url).pathname
export const BIN = `${root}bin/run.js`

export interface CliResult {
  status: number | null
  stdout: string
  stderr: string
}

if (!existsSync(`${root}dist/commands`)) throw new Error('CLI tests need a build: run `npm run build` first')

export function cli(args: string[], options: {input?: string; env?: Record<string, string>; cwd?: string} = {}): CliResult {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    encoding: 'utf8',
    cwd: options.cwd,
    input: options.input ?? '',
    env: {...process.env, NO_COLOR: '1', ...options.env},
    timeout: 120_000,
  })
  return {status: r.status, stdout: r.stdout, stderr: r.stderr}
}

/** Async variant, for tests that kill the process mid-run. */
export function cliAsync(args: string[], env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [BIN, ...args], {env: {...process.env, NO_COLOR: '1', ...env}, stdio: ['ignore', 'pipe', 'pipe']})
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => (stdout += d))
  child.stderr.on('data', (d) => (stderr += d))
  const done = new Promise<CliResult & {signal: NodeJS.Signals | null}>((resolve) =>
    child.on('close', (status, signal) => resolve({status, signal, stdout, stderr})),
  )
  return {child, done, output: () => ({stdout, stderr})}
}
