import {Args} from '@oclif/core'
import {OutboxCommand} from '../src/cli/base.js'
import type {Setting} from '../src/cli/settings/keys.js'
import {keyOf} from '../src/cli/settings/keys.js'
import {redactSecrets} from '../src/core/redact.js'
import {UsageError} from '../src/core/errors.js'
import {renderTable} from '../src/render/table.js'

export interface ConfigReport {
  command: string
  settings: {flag: string; key: string; value: string | null; source: Setting['source']; from: string | null}[]
}

export default class Config extends OutboxCommand {
  static override summary = "Print a command's resolved settings and where each came from (flag, env, file, default)"
  static override description = `Give the command and, if you like, its flags as you would run it: nothing runs and nothing connects; each setting is shown with its value (passwords masked) and its source.

Precedence, explicit beats implicit: a flag, then its OUTBOX_* variable (OUTBOX_DATABASE_URL, OUTBOX_TARGET), then the config file (--config FILE, OUTBOX_CONFIG, or ./outbox.config.json), then DATABASE_URL (the URL only), then the default.

Exit codes: 0 printed, 2 an unknown command or a bad flag, key or value (the same check the command itself makes).`
  static override examples = [
    '<%= config.bin %> config relay',
    '<%= config.bin %> config relay --once --batch 50',
    '<%= config.bin %> config failed show --json',
  ]
  static override strict = false
  static override enableJsonFlag = true
  static override args = {command: Args.string({description: 'the command, e.g. relay or "failed show", then its flags', required: true})}

  async run(): Promise<ConfigReport> {
    // not this.parse: the words after the command are that command's flags, checked by its parse
    const words = this.argv.filter((a) => a !== '--json')
    this.parsed = true // by the target command's parse, below
    if (words.length === 0 || words[0].startsWith('-')) throw new UsageError('config needs the command whose settings to show', 'e.g. outbox config relay --once')
    const {id, rest} = this.splitCommand(words)
    const target = this.config.findCommand(id)
    if (!target || id === 'config') throw new UsageError(`unknown command ${JSON.stringify(id.replaceAll(':', ' '))}`, `Give one of: ${this.config.commands.filter((c) => !c.hidden && c.id !== 'config').map((c) => c.id.replaceAll(':', ' ')).join(', ')}`)
    const Command = (await target.load()) as unknown as new (argv: string[], config: typeof this.config) => OutboxCommand
    const command = new Command(rest, this.config)
    command.id = id
    const settings = await command.resolveSettings()
    const url = settings.find((s) => s.flag === 'url')
    if (url?.source === 'unset' && process.env.DATABASE_URL) Object.assign(url, {text: process.env.DATABASE_URL, source: 'env', from: 'DATABASE_URL'})
    const report: ConfigReport = {
      command: id.replaceAll(':', ' '),
      settings: settings.map((s) => ({flag: s.flag, key: keyOf(s.flag), value: s.text === undefined ? null : redactSecrets(s.text), source: s.source, from: s.from ?? null})),
    }
    if (!this.jsonEnabled()) {
      const rows = report.settings.map((s) => [`--${s.flag}`, s.value ?? '', s.from ? `${s.source}: ${s.from}` : s.source])
      this.log(`outbox ${report.command}: settings and where each came from`)
      this.log(await renderTable(['flag', 'value', 'source'], rows, {compact: true}))
    }
    return report
  }

  /** "failed show --limit 3" -> failed:show and the rest; the longest id that exists wins. */
  private splitCommand(words: string[]): {id: string; rest: string[]} {
    const leading = words.findIndex((w) => w.startsWith('-'))
    const names = leading === -1 ? words : words.slice(0, leading)
    for (let n = names.length; n > 0; n--) {
      const id = names.slice(0, n).join(':')
      if (this.config.findCommand(id)) return {id, rest: words.slice(n)}
    }
    return {id: names.join(':'), rest: words.slice(names.length)}
  }
}
