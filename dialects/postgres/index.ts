// PostgreSQL 12+: FOR UPDATE SKIP LOCKED in a MATERIALIZED CTE, partial pending index. One file
// per part; this one only puts them together.
import type {Dialect} from '../dialect.js'
import {batches} from './batches.js'
import {ddl} from './ddl.js'
import {driver} from './driver.js'
import {errors} from './errors.js'
import {events} from './events.js'
import {namedLock} from './lock.js'
import {relay} from './relay.js'
import {render} from './render.js'
import {transactionLease} from './tx-lease.js'
import {verify} from './verify.js'
import {wire} from './wire.js'

export const postgres: Dialect = {name: 'postgres', displayName: 'PostgreSQL', driver, render, ddl, relay: {...relay, transactionLease}, events, batches, verify, errors, namedLock, wire}
