// What bench/status-profile.js and bench/drain-profile.js share: the server, the command line's
// --name=value options, the two tables (OUTBOX_BENCH_PREFIX: status-profile.js --seed makes them)
// and the builds to compare (this tree's; OUTBOX_BENCH_BEFORE=<dist>: another's too).
import {pathToFileURL} from 'node:url'
import {lib} from './lib-under-test.js'

export const args = process.argv.slice(2)
/** --dialect=mysql: MariaDB (status-profile.js); PostgreSQL otherwise */
export const DIALECT = args.find((a) => a.startsWith('--dialect='))?.split('=')[1] ?? 'postgres'
export const URL =
  DIALECT === 'mysql'
    ? (process.env.OUTBOX_BENCH_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test')
    : (process.env.OUTBOX_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test')
export const option = (name, fallback) => Number(args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback)
const prefix = process.env.OUTBOX_BENCH_PREFIX ?? 'sprof'
export const tables = {plain: {outbox: `${prefix}_u`, inbox: `${prefix}_u_in`, archive: `${prefix}_u_ar`}, parted: {outbox: `${prefix}_p`, inbox: `${prefix}_p_in`, archive: `${prefix}_p_ar`}}

export const builds = {after: lib}
if (process.env.OUTBOX_BENCH_BEFORE) builds.before = await import(pathToFileURL(`${process.env.OUTBOX_BENCH_BEFORE}/src/index.js`).href)
