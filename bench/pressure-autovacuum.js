// PostgreSQL's autovacuum for a pressure run. The machine's server may run with it off (this
// one does: conf.d/90-ci.conf), and then nothing ever vacuums the outbox: its dead versions and
// the catalogs' pile up over a run and every scan of the table (the active readers', the gauges')
// grows with them, which no production server does. `--autovacuum=on` (the default) turns it on
// for the run with ALTER SYSTEM and a reload, and puts the server back as it was after, also on
// Ctrl-C; `--autovacuum=server` leaves the server's setting alone.
import {session} from './pressure-load.js'

async function query(url, text) {
  const s = await session('postgres', url)
  try {
    return await s.run(text)
  } finally {
    await s.end()
  }
}

/**
 * Makes autovacuum `want` ('on' | 'off') on the server at `url` for now; returns how it was found
 * and `restore()`, which undoes exactly what was changed (nothing if it already was `want`).
 */
export async function setAutovacuum(url, want) {
  const [was] = await query(url, "SELECT setting, source, sourcefile FROM pg_settings WHERE name = 'autovacuum'")
  const found = was.setting
  if (found === want) return {found, changed: false, restore: async () => {}}
  // set by an earlier ALTER SYSTEM: restore that value; from the config files: RESET it away
  const fromAuto = (was.sourcefile ?? '').endsWith('postgresql.auto.conf')
  await query(url, `ALTER SYSTEM SET autovacuum = ${want === 'on' ? 'on' : 'off'}`)
  await query(url, 'SELECT pg_reload_conf()')
  let restored = false
  const restore = async () => {
    if (restored) return
    restored = true
    await query(url, fromAuto ? `ALTER SYSTEM SET autovacuum = ${found === 'on' ? 'on' : 'off'}` : 'ALTER SYSTEM RESET autovacuum')
    await query(url, 'SELECT pg_reload_conf()')
  }
  return {found, changed: true, restore}
}
