// Builds dist/ once before the tests when it is missing or older than the sources: the CLI
// tests spawn ./bin/run.js, which runs the compiled commands.
import {execSync} from 'node:child_process'
import {existsSync, readdirSync, statSync} from 'node:fs'
import {join} from 'node:path'

const root = new URL('..', import.meta.url).pathname

function newest(path: string): number {
  const stat = statSync(path)
  if (!stat.isDirectory()) return stat.mtimeMs
  return Math.max(0, ...readdirSync(path).map((name) => newest(join(path, name))))
}

export function setup(): void {
  const built = join(root, 'oclif.manifest.json') // written last by `npm run build`
  const sources = ['commands', 'dialects', 'src', 'scripts', 'package.json', 'tsconfig.json'].map((p) => join(root, p))
  const stale = !existsSync(join(root, 'dist/src/index.js')) || !existsSync(built) || newest(built) < Math.max(...sources.map(newest))
  if (!stale) return
  console.log('[outbox tests] dist/ is missing or stale: npm run build')
  execSync('npm run build', {cwd: root, stdio: ['ignore', 'ignore', 'inherit']})
}
