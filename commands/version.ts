import {OutboxCommand} from '../src/cli/base.js'

export interface VersionReport {
  version: string
  node: string
  platform: string
  arch: string
}

export default class Version extends OutboxCommand {
  static override summary = 'Print the version of outbox, Node.js and the platform (also --version, -v)'
  static override description = 'Exit codes: 0 printed, 2 a bad flag.'
  static override examples = ['<%= config.bin %> version', '<%= config.bin %> version --json']
  static override enableJsonFlag = true

  async run(): Promise<VersionReport> {
    await this.parse(Version)
    const report = {version: this.config.version, node: process.versions.node, platform: process.platform, arch: process.arch}
    // the same line as --version and -v
    this.log(this.config.userAgent)
    return report
  }
}
