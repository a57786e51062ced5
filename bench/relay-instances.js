#!/usr/bin/env node
// One relay against four on one PostgreSQL table, in absolute events/s, so two builds can be set
// side by side (the relay suite gives only 4 / 1 within a build). Not a suite: run it by hand,
// once per build, alternating, e.g.
//   for i in 1 2 3; do for d in /work/old/dist dist; do OUTBOX_BENCH_DIST=$d node bench/relay-instances.js; done; done
// Each run: the suite's relayRun (4,000 events, batch 100, no-op publisher, each instance its own
// pool of 2, connected before the clock), 1 and 4 instances alternating, --rounds of each.
import {randomUUID} from 'node:crypto'
import {fmt, median} from './lib.js'
import {relayRun, seed} from './suites/relay.js'
import {applyInit, DIST, dialectOf, openDb, raw, sql} from './lib-under-test.js'

const URL = process.env.OUTBOX_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const EVENTS = 4000
const i = process.argv.indexOf('--rounds')
const rounds = i < 0 ? 6 : Number(process.argv[i + 1])
const db = await openDb(URL)
const names = {outbox: `bench_inst_${randomUUID().slice(0, 8)}`, inbox: 'bench_inst_in', archive: 'bench_inst_ar'}
await applyInit(db, names, {inbox: false, archive: false})
const rates = {1: [], 4: []}
try {
  await seed(db, names, 2000)
  await relayRun(URL, names, 1) // warm-up
  for (let round = 0; round < rounds; round++) {
    for (const k of round % 2 ? [4, 1] : [1, 4]) {
      await seed(db, names, EVENTS)
      await new Promise((resolve) => setTimeout(resolve, 250))
      const result = await relayRun(URL, names, k)
      if (result.total !== EVENTS) throw new Error(`${k} relays: ${result.total} of ${EVENTS} events`)
      rates[k].push((result.total / result.ms) * 1000)
    }
  }
} finally {
  await db.execute(sql`DROP TABLE IF EXISTS ${raw(dialectOf(db).render.table(names, 'outbox'))}`)
  await db.close()
}
const scale = median(rates[4].map((r, k) => r / rates[1][k]))
console.log(`${DIST}: 1 relay ${fmt(median(rates[1]), 0)} events/s, 4 relays ${fmt(median(rates[4]), 0)} events/s, 4/1 x${fmt(scale, 2)} (${rounds} rounds, medians)`)
