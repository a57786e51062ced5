// The pressure suite's relays: `outbox relay` processes (the shipped CLI, stdout publisher),
// each event line timed as it arrives here, each batch's log line (its ms) kept; a relay that
// exits unasked is counted and started again. Faults: SIGKILL a relay (restarted), and cut the
// relays' database connections (pg_terminate_backend by application_name; KILL on MariaDB by
// the relay's own client ports).
import {execFileSync, spawn} from 'node:child_process'
import {createInterface} from 'node:readline'
import {BIN} from './tree.js'

const RESTART_MS = 500
// stdout line: {"id":"<36 chars>",...: the id is read by position, no JSON parse per event
const ID_AT = '{"id":"'.length

export class RelaySet {
  /** onEvent(id, at) per published line; onBatch(ms, claimed, at, claimMs) per batch log line. */
  constructor({dialect, url, table, count, claimFrom, onEvent, onBatch}) {
    Object.assign(this, {dialect, url, table, claimFrom, onEvent, onBatch})
    this.appName = `${table}_relay`
    this.children = new Array(count)
    this.exits = [] // {index, code, signal, line}: exits nobody asked for
    this.kills = 0
    this.stopping = false
    this.started = 0 // 'relay started' lines seen
  }

  /** Resolves once every relay has logged that it started (the first spawn takes a second or two). */
  async ready(timeoutMs = 30_000) {
    const end = performance.now() + timeoutMs
    while (this.started < this.children.length) {
      if (performance.now() > end) throw new Error(`pressure: ${this.children.length - this.started} relay(s) did not start: ${this.children.map((s) => s?.last).filter(Boolean).join('; ')}`)
      await new Promise((r) => setTimeout(r, 50))
    }
  }

  start() {
    for (let i = 0; i < this.children.length; i++) this.spawn(i)
  }

  spawn(index) {
    const url = this.dialect === 'postgres' ? `${this.url}${this.url.includes('?') ? '&' : '?'}application_name=${this.appName}${process.env.RELAY_PGOPTIONS ? `&options=${encodeURIComponent(process.env.RELAY_PGOPTIONS)}` : ''}` : this.url
    const args = [BIN, 'relay', '--url', url, '--table', this.table, '--publisher', 'stdout', '--poll', '100ms', '--log-format', 'json']
    if (this.dialect === 'postgres') args.push('--listen')
    if (this.claimFrom) args.push('--claim-from', this.claimFrom)
    const child = spawn(process.execPath, args, {stdio: ['ignore', 'pipe', 'pipe'], env: {...process.env, NO_COLOR: '1'}})
    const state = {child, asked: false, last: ''}
    this.children[index] = state
    createInterface({input: child.stdout}).on('line', (line) => this.onEvent(line.slice(ID_AT, ID_AT + 36), performance.now()))
    createInterface({input: child.stderr}).on('line', (line) => {
      try {
        const entry = JSON.parse(line)
        if (entry.msg === 'batch') this.onBatch(entry.ms, entry.claimed, performance.now(), entry.claimMs)
        else if (entry.msg === 'relay started') this.started++
        else if (entry.level !== 'info') state.last = `${entry.level} ${entry.msg}${entry.error ? `: ${entry.error}` : ''}`
      } catch {
        state.last = line
      }
    })
    state.exited = new Promise((resolve) =>
      child.on('exit', (code, signal) => {
        if (!state.asked && !this.stopping) {
          this.exits.push({index, code, signal, line: state.last})
          setTimeout(() => this.stopping || this.spawn(index), RESTART_MS)
        }
        resolve()
      }),
    )
  }

  /** SIGKILL relay `index`, and start it again after RESTART_MS. */
  async kill(index) {
    const state = this.children[index]
    state.asked = true
    this.kills++
    state.child.kill('SIGKILL')
    await state.exited
    await new Promise((r) => setTimeout(r, RESTART_MS))
    if (!this.stopping) this.spawn(index)
  }

  /** Ends every database connection the relays hold; returns how many. */
  async cutConnections(admin) {
    if (this.dialect === 'postgres') {
      const rows = await admin.run('SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = $1', [this.appName])
      return rows[0].n
    }
    const ports = this.clientPorts()
    if (ports.length === 0) return 0
    const rows = await admin.run('SELECT ID AS id, HOST AS host FROM information_schema.PROCESSLIST')
    let cut = 0
    for (const row of rows) {
      if (!ports.includes(String(row.host).split(':').pop())) continue
      await admin.run(`KILL ${Number(row.id)}`).catch(() => {})
      cut++
    }
    return cut
  }

  /** The local ports of the relays' TCP connections to the server (ss -tnp; our own children). */
  clientPorts() {
    const pids = this.children.map((s) => s.child.pid)
    const port = new URL(this.url).port || '3306'
    const out = execFileSync('ss', ['-tnpH', `dport = :${port}`], {encoding: 'utf8'})
    return out
      .split('\n')
      .filter((line) => pids.some((pid) => line.includes(`pid=${pid},`)))
      .map((line) => line.trim().split(/\s+/)[3]?.split(':').pop())
      .filter(Boolean)
  }

  /** SIGTERM every relay (they finish their batch and hand leases back) and wait for them. */
  async stop() {
    this.stopping = true
    for (const s of this.children) {
      if (!s) continue
      s.asked = true
      s.child.kill('SIGTERM')
    }
    await Promise.all(this.children.map((s) => s?.exited))
  }

  /** Last resort on Ctrl-C: nothing is awaited. */
  killAll() {
    this.stopping = true
    for (const s of this.children) s?.child.kill('SIGKILL')
  }
}
